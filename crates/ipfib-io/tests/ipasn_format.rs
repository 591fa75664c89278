//! pyasn's IPASN format, `Auto` sniffing, and the formats not read yet.

mod common;
use common::triples;
use ipfib_io::{read_routes, read_routes_from, Format, HostBits, LoadOptions, ReadError};

// The shape of routeviews-20151101.ipasn.dat (its first lines, verbatim).
const IPASN: &str = "\
; IP-ASN32-DAT file
; Original file : Downloads/rib_v6v4.20151101.0600.bz2
; Converted on  : Thu Nov 19 19:03:21 2015
; Prefixes-v4   : 2
; Prefixes-v6   : 1
; 
1.0.0.0/24\t15169
1.0.4.0/24\t56203
2001:200::/32\t2500
";

fn opts(format: Format) -> LoadOptions {
    LoadOptions {
        format,
        host_bits: HostBits::Reject,
    }
}

#[test]
fn reads_ipasn_explicitly_and_by_sniffing() {
    for format in [Format::Ipasn, Format::Auto] {
        let loaded = read_routes_from(IPASN.as_bytes(), "x.dat", &opts(format)).unwrap();
        assert_eq!(loaded.format, Format::Ipasn);
        assert_eq!(loaded.lines, 9);
        let got = triples(&loaded);
        assert_eq!(
            got,
            [
                ("1.0.0.0/24".parse().unwrap(), "15169", 7),
                ("1.0.4.0/24".parse().unwrap(), "56203", 8),
                ("2001:200::/32".parse().unwrap(), "2500", 9),
            ]
        );
    }
}

#[test]
fn auto_sniffs_after_blank_lines_and_defaults_to_text() {
    let blank_first = format!("\n  \n{IPASN}");
    let loaded = read_routes_from(blank_first.as_bytes(), "x", &opts(Format::Auto)).unwrap();
    assert_eq!(loaded.format, Format::Ipasn);
    assert_eq!(loaded.routes.len(), 3);

    // Tab-separated data with no ';' header is read as text: the same routes.
    let data_only = "1.0.0.0/24\t15169\n";
    let loaded = read_routes_from(data_only.as_bytes(), "x", &opts(Format::Auto)).unwrap();
    assert_eq!(loaded.format, Format::Text);
    assert_eq!(loaded.routes[0].value, "15169");

    // A text table's '#' lines are no ipasn comments.
    let e =
        read_routes_from("# c\n1.0.0.0/24 1\n".as_bytes(), "t", &opts(Format::Ipasn)).unwrap_err();
    assert_eq!(e.to_string(), "t:1: missing '/LEN' in prefix \"#\"");
}

#[test]
fn ipasn_values_must_be_asns_and_nothing_may_follow() {
    let cases = [
        (
            "; h\n1.0.0.0/24\tAS15169\n",
            "x.dat:2: invalid value \"AS15169\": an ipasn value must be an ASN (a decimal \
             integer below 2^32)",
        ),
        (
            "; h\n1.0.0.0/24\t4294967296\n",
            "x.dat:2: invalid value \"4294967296\": an ipasn value must be an ASN (a decimal \
             integer below 2^32)",
        ),
        (
            "; h\n1.0.0.0/24\t1\t2\n",
            "x.dat:2: unexpected \"2\" after the value in \"1.0.0.0/24\\t1\\t2\"",
        ),
        (
            "; h\n\n1.0.0.0/24\n",
            "x.dat:3: missing value after the prefix in \"1.0.0.0/24\"",
        ),
        (
            "; h\n1.0.0.1/24\t1\n",
            "x.dat:2: host bits set in 1.0.0.1/24 (did you mean 1.0.0.0/24?)",
        ),
    ];
    for (text, want) in cases {
        let e = read_routes_from(text.as_bytes(), "x.dat", &opts(Format::Auto)).unwrap_err();
        assert_eq!(e.to_string(), want, "input {text:?}");
    }
}

#[test]
fn mrt_and_updates_are_not_line_tables() {
    for (format, name) in [(Format::Mrt, "mrt"), (Format::Updates, "updates")] {
        let e = read_routes_from(IPASN.as_bytes(), "x", &opts(format)).unwrap_err();
        assert!(matches!(e, ReadError::UnsupportedFormat { format: f } if f == format));
        assert_eq!(
            e.to_string(),
            format!("format '{name}' is not a line table here; use ipfib_io::load_table")
        );
        assert_eq!(e.line(), None);
        // Refused before the file is even opened.
        let e =
            read_routes(std::path::Path::new("/nonexistent/rib.mrt"), &opts(format)).unwrap_err();
        assert!(matches!(e, ReadError::UnsupportedFormat { .. }));
    }
}
