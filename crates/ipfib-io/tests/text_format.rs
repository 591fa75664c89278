//! The text table format: what reads, and each line error with its
//! exact `file:line` message.

mod common;
use common::triples;
use ipfib_io::{
    for_each_route_from, read_routes_from, AnyPrefix, Format, HostBits, LoadOptions, ReadError,
};

const GOOD: &str = "\
# routes for the text-format test
10.0.0.0/8 100

   # an indented comment
10.1.0.0/16\t\tcore-1   # trailing comment
2001:db8::/32 64500
\t2001:db8:1::/48    2001:db8::1#not-a-comment?
0.0.0.0/0 0 #
::/0 default
10.0.0.0/8 200
";

fn text_opts() -> LoadOptions {
    LoadOptions {
        format: Format::Text,
        host_bits: HostBits::Reject,
    }
}

fn read(text: &str) -> Result<ipfib_io::LoadedRoutes, ReadError> {
    read_routes_from(text.as_bytes(), "routes.txt", &LoadOptions::default())
}

fn err(text: &str) -> String {
    read(text).expect_err("should fail").to_string()
}

fn p(s: &str) -> AnyPrefix {
    s.parse().unwrap()
}

#[test]
fn reads_comments_blanks_mixed_families_and_duplicates_in_order() {
    // "2001:db8::1#not-a-comment?" has '#' inside the value: refused, so the
    // good table leaves it out and the test below checks that refusal.
    let good = GOOD.replace("    2001:db8::1#not-a-comment?", " 2001:db8::1");
    let loaded = read(&good).unwrap();
    assert_eq!(loaded.format, Format::Text);
    assert_eq!(loaded.lines, 10);
    let got = triples(&loaded);
    assert_eq!(
        got,
        [
            (p("10.0.0.0/8"), "100", 2),
            (p("10.1.0.0/16"), "core-1", 5),
            (p("2001:db8::/32"), "64500", 6),
            (p("2001:db8:1::/48"), "2001:db8::1", 7),
            (p("0.0.0.0/0"), "0", 8),
            (p("::/0"), "default", 9),
            (p("10.0.0.0/8"), "200", 10),
        ]
    );
}

#[test]
fn hash_inside_a_value_is_refused() {
    assert_eq!(
        err(GOOD),
        "routes.txt:7: invalid value \"2001:db8::1#not-a-comment?\": '#' inside a value \
         (a trailing comment needs whitespace before it)"
    );
}

#[test]
fn crlf_bom_and_missing_final_newline_are_fine() {
    let loaded = read("\u{feff}10.0.0.0/8 1\r\n\r\n::/0 2").unwrap();
    assert_eq!(loaded.lines, 3);
    assert_eq!(loaded.routes.len(), 2);
    assert_eq!(loaded.routes[1].value, "2");
    assert_eq!(loaded.routes[1].line, 3);
}

#[test]
fn empty_and_comment_only_inputs_have_no_routes() {
    for text in ["", "\n\n  \n", "# nothing\n"] {
        let loaded = read(text).unwrap();
        assert!(loaded.routes.is_empty());
        assert_eq!(loaded.format, Format::Text);
    }
}

#[test]
fn host_bits_are_an_error_naming_the_line_unless_masked() {
    let text = "10.0.0.0/8 1\n".repeat(16) + "10.0.0.1/8 2\n";
    assert_eq!(
        err(&text),
        "routes.txt:17: host bits set in 10.0.0.1/8 (did you mean 10.0.0.0/8?)"
    );
    let e = read(&text).unwrap_err();
    assert!(matches!(&e, ReadError::Prefix { line: 17, text, .. } if text == "10.0.0.1/8 2"));
    assert_eq!(e.line(), Some(17));

    let v6 = "2001:db8::1/32 1\n";
    assert_eq!(
        err(v6),
        "routes.txt:1: host bits set in 2001:db8::1/32 (did you mean 2001:db8::/32?)"
    );

    let opts = LoadOptions {
        host_bits: HostBits::Mask,
        ..LoadOptions::default()
    };
    let loaded = read_routes_from(text.as_bytes(), "routes.txt", &opts).unwrap();
    assert_eq!(loaded.routes[16].prefix, p("10.0.0.0/8"));
    assert_eq!(loaded.routes[16].value, "2");
}

#[test]
fn each_line_error_names_file_and_line() {
    let cases = [
        (
            "10.0.0.0/8\n",
            "routes.txt:1: missing value after the prefix in \"10.0.0.0/8\"",
        ),
        (
            "# c\n10.0.0.0/8   # no value\n",
            "routes.txt:2: missing value after the prefix in \"10.0.0.0/8   # no value\"",
        ),
        (
            "10.0.0.0/8 1 2\n",
            "routes.txt:1: unexpected \"2\" after the value in \"10.0.0.0/8 1 2\"",
        ),
        (
            "\n\n10.0.0.0 1\n",
            "routes.txt:3: missing '/LEN' in prefix \"10.0.0.0\"",
        ),
        (
            "10.0.0/8 1\n",
            "routes.txt:1: invalid IPv4 address \"10.0.0\"",
        ),
        (
            "2001:db8::g/32 1\n",
            "routes.txt:1: invalid IPv6 address \"2001:db8::g\"",
        ),
        (
            "10.0.0.0/33 1\n",
            "routes.txt:1: prefix length /33 is longer than /32",
        ),
        (
            "::/129 1\n",
            "routes.txt:1: prefix length /129 is longer than /128",
        ),
        (
            "10.0.0.0/x 1\n",
            "routes.txt:1: invalid prefix length \"x\"",
        ),
        (
            "10.0.0.0/8 1\n; ipasn comment\n",
            "routes.txt:2: missing '/LEN' in prefix \";\"",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(err(text), want, "input {text:?}");
    }
}

#[test]
fn invalid_utf8_names_the_line() {
    let bytes = b"10.0.0.0/8 1\n10.1.0.0/16 caf\xe9\n";
    let e = read_routes_from(&bytes[..], "routes.txt", &LoadOptions::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "routes.txt:2: line is not valid UTF-8: \"10.1.0.0/16 caf\u{fffd}\""
    );
    assert_eq!(e.line(), Some(2));
}

#[test]
fn long_lines_are_cut_in_messages() {
    let line = format!("10.0.0.0/8 1 {}", "x".repeat(500));
    let e = read(&line).unwrap_err();
    let ReadError::ExtraText { text, extra, .. } = &e else {
        panic!("wrong error {e:?}");
    };
    assert_eq!(text.chars().count(), ipfib_io::MAX_QUOTED_CHARS + 3);
    assert!(text.ends_with("..."));
    assert_eq!(extra.chars().count(), ipfib_io::MAX_QUOTED_CHARS + 3);
    assert!(e.to_string().len() < 250);
}

#[test]
fn binary_input_is_refused_under_auto_and_a_line_error_under_text() {
    // An MRT TABLE_DUMP_V2 header: timestamp, type 13, subtype 1, length.
    let mrt = b"\x53\x83\x1e\x60\x00\x0d\x00\x01\x00\x00\x00\x10rest\n";
    let e = read_routes_from(&mrt[..], "rib.mrt", &LoadOptions::default()).unwrap_err();
    assert!(matches!(e, ReadError::Binary { .. }));
    assert_eq!(
        e.to_string(),
        "rib.mrt: input is binary, not a text route table (an MRT dump? use --format mrt or auto)"
    );
    let e = read_routes_from(&mrt[..], "rib.mrt", &text_opts()).unwrap_err();
    assert_eq!(e.line(), Some(1));
}

#[test]
fn streaming_can_collect_bad_lines_and_read_on() {
    let text = "10.0.0.0/8 1\n10.0.0.1/8 2\nbad\n::/0 3\n";
    let mut good = Vec::new();
    let mut bad = Vec::new();
    let summary = for_each_route_from(text.as_bytes(), "t", &text_opts(), |r| {
        match r {
            Ok(route) => good.push(route.line),
            Err(e) => bad.push(e.line()),
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(good, [1, 4]);
    assert_eq!(bad, [Some(2), Some(3)]);
    assert_eq!(summary.lines, 4);
    assert_eq!(summary.routes, 2);
    assert_eq!(summary.format, Format::Text);

    // Passing errors through with `?` stops at the first one.
    let mut seen = 0;
    let e = for_each_route_from(text.as_bytes(), "t", &text_opts(), |r| {
        r?;
        seen += 1;
        Ok(())
    })
    .unwrap_err();
    assert_eq!(seen, 1);
    assert_eq!(e.line(), Some(2));
}
