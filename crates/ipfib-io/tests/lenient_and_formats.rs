//! `load_table`: pfx2as, text updates, `--format auto` sniffing, value
//! policies per format, and the lenient handling of bad lines and damaged
//! streams (everything complete is kept; the damage is reported with its
//! offset in the decompressed stream; `strict` fails instead).

mod common;

use common::{big_table, gzip, Scratch};
use ipfib_io::{
    load_table, load_table_from, read_updates_from, DamageKind, Event, Format, HostBits,
    PeerSelector, ReadError, TableLoad, TableOptions, ValuePolicy, MAX_LINE_BYTES,
};
use std::io::Cursor;

fn from(text: &str, format: Format, strict: bool) -> Result<TableLoad, ReadError> {
    let opts = TableOptions {
        format,
        strict,
        ..Default::default()
    };
    load_table_from(Cursor::new(text.as_bytes().to_vec()), "t", &opts)
}

fn pairs(l: &TableLoad) -> Vec<(String, &str)> {
    l.routes
        .iter()
        .map(|r| (r.prefix.to_string(), r.value.as_str()))
        .collect()
}

const PFX2AS: &str = "1.0.0.0\t24\t13335\n\
                      1.0.4.0\t22\t38803_56203\n\
                      2001:db8::\t32\t64500,64501\n\
                      10.0.0.0\t8\t7_8,9\n";

#[test]
fn caida_pfx2as_keeps_multi_origin_and_as_sets_as_written() {
    for format in [Format::Pfx2as, Format::Auto] {
        let l = from(PFX2AS, format, false).unwrap();
        assert_eq!(l.report.format, Format::Pfx2as);
        assert_eq!(
            pairs(&l),
            [
                ("1.0.0.0/24".to_string(), "13335"),
                ("1.0.4.0/22".to_string(), "38803_56203"),
                ("2001:db8::/32".to_string(), "64500,64501"),
                ("10.0.0.0/8".to_string(), "7_8,9"),
            ]
        );
        assert!(!l.report.has_problems());
    }
}

#[test]
fn bad_lines_are_skipped_and_counted_or_fail_when_strict() {
    let text = format!("{PFX2AS}1.0.0.1\t24\t1\n1.2.3.0\t24\tAS5\nbogus\n1.2.0.0\t16\t5\n");
    let l = from(&text, Format::Pfx2as, false).unwrap();
    assert_eq!(l.routes.len(), 5);
    assert_eq!(l.report.bad, 3);
    let lines: Vec<u64> = l.report.errors.iter().filter_map(ReadError::line).collect();
    assert_eq!(lines, [5, 6, 7]);
    assert_eq!(
        l.report.errors[0].to_string(),
        "t:5: host bits set in 1.0.0.1/24 (did you mean 1.0.0.0/24?)"
    );
    assert!(l.report.errors[1].to_string().contains("pfx2as value"));
    let e = from(&text, Format::Pfx2as, true).unwrap_err();
    assert_eq!(e.line(), Some(5));
    // Text tables the same way.
    let l = from(
        "10.0.0.0/8 1\nnot a line\n10.1.0.0/16 2\n",
        Format::Text,
        false,
    )
    .unwrap();
    assert_eq!((l.routes.len(), l.report.bad, l.report.records), (2, 1, 3));
}

#[test]
fn auto_sniffs_every_format_and_lists_what_it_tried() {
    for (text, want) in [
        ("; IP-ASN32-DAT\n1.0.0.0/24\t1\n", Format::Ipasn),
        ("# c\n1.0.0.0/24 1\n", Format::Text),
        ("1.0.0.0\t24\t1\n", Format::Pfx2as),
        ("1418774413 a 1.0.0.0/24 195.66.226.74\n", Format::Updates),
        ("", Format::Text),
    ] {
        assert_eq!(
            from(text, Format::Auto, false).unwrap().report.format,
            want,
            "{text:?}"
        );
    }
    let e = from("\u{1}\u{2}garbage that is no format", Format::Auto, false).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, ReadError::UnknownFormat { .. }));
    assert!(
        msg.starts_with("t: unrecognised format; tried mrt ("),
        "{msg}"
    );
    assert!(msg.contains("ipasn, pfx2as, updates, text"), "{msg}");
}

const UPDATES: &str = "1418774413 a 10.0.0.0/8 195.66.226.74\n\
                       1418774413 a 10.1.0.0/16 195.66.226.75\n\
                       1418774414 w 10.0.0.0/8 0.0.0.0\n\
                       # a comment\n\
                       1418774415 a 10.2.0.0/16 195.66.226.74\n\
                       1418774415 a 10.1.0.0/16 195.66.226.76\n";

#[test]
fn text_updates_replay_to_the_final_fib_and_iterate_as_events() {
    let l = from(UPDATES, Format::Auto, false).unwrap();
    assert_eq!(l.report.format, Format::Updates);
    assert_eq!(
        pairs(&l),
        [
            ("10.1.0.0/16".to_string(), "195.66.226.76"),
            ("10.2.0.0/16".to_string(), "195.66.226.74"),
        ]
    );
    let m = l.report.mrt.as_ref().unwrap();
    assert_eq!((m.announcements, m.withdrawals), (4, 1));
    let opts = TableOptions {
        format: Format::Updates,
        value: Some(ValuePolicy::OriginAsn),
        ..Default::default()
    };
    let e = load_table_from(Cursor::new(UPDATES.as_bytes().to_vec()), "u", &opts).unwrap_err();
    assert!(e.to_string().contains("no AS path"), "{e}");
    let opts = TableOptions {
        value: Some(ValuePolicy::NextHop(PeerSelector::Index(0))),
        ..Default::default()
    };
    assert!(load_table_from(Cursor::new(UPDATES.as_bytes().to_vec()), "u", &opts).is_ok());

    let events: Vec<Event> = read_updates_from(
        Cursor::new(UPDATES.as_bytes().to_vec()),
        "u",
        &Default::default(),
    )
    .unwrap()
    .map(Result::unwrap)
    .collect();
    assert_eq!(events.len(), 5);
    // A bad line is skipped and counted; strict stops at it.
    let bad = format!("{UPDATES}1418774416 x 10.3.0.0/16 1.1.1.1\n");
    let mut r = read_updates_from(
        Cursor::new(bad.clone().into_bytes()),
        "u",
        &Default::default(),
    )
    .unwrap();
    assert_eq!(r.by_ref().count(), 5);
    assert_eq!(r.report().bad, 1);
    assert_eq!(r.report().errors[0].line(), Some(7));
    let strict = TableOptions {
        strict: true,
        ..Default::default()
    };
    let results: Vec<_> = read_updates_from(Cursor::new(bad.into_bytes()), "u", &strict)
        .unwrap()
        .collect();
    assert!(results.last().unwrap().is_err());
}

#[test]
fn line_tables_refuse_a_value_policy() {
    let opts = TableOptions {
        value: Some(ValuePolicy::PeerCount),
        ..Default::default()
    };
    let e = load_table_from(Cursor::new(b"10.0.0.0/8 1\n".to_vec()), "t", &opts).unwrap_err();
    assert!(matches!(e, ReadError::Policy { .. }));
    assert!(
        e.to_string().contains("a text table carries its own value"),
        "{e}"
    );
}

#[test]
fn truncated_compressed_text_keeps_every_complete_line() {
    let s = Scratch::new("lenient");
    let table = big_table();
    for (name, bytes) in [
        ("cut.gz", gzip(table.as_bytes())),
        ("cut.bz2", common::bzip2(table.as_bytes())),
        ("cut.zst", common::zstd(table.as_bytes())),
    ] {
        let path = s.write(name, &bytes[..bytes.len() * 3 / 5]);
        let l = load_table(&path, &TableOptions::default()).unwrap();
        let d = l
            .report
            .damage
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: no damage"));
        assert_eq!(d.kind, DamageKind::Stream, "{name}");
        assert!(d.stream_error.is_some());
        let n = l.routes.len();
        assert_eq!(d.records_before, n as u64, "{name}");
        // Every line before the damage, whole, and its offset is where the
        // next line starts.
        let want: usize = table.lines().take(n).map(|x| x.len() + 1).sum();
        assert_eq!(d.offset, want as u64, "{name}");
        for (i, r) in l.routes.iter().enumerate() {
            assert_eq!(r.value, i.to_string(), "{name}: a cut line was read");
        }
        let strict = TableOptions {
            strict: true,
            ..Default::default()
        };
        let e = load_table(&path, &strict).unwrap_err();
        assert!(matches!(e, ReadError::DamagedStream { .. }), "{name}: {e}");
    }
}

#[test]
fn a_line_without_end_is_bounded() {
    let mut text = b"10.0.0.0/8 1\n".to_vec();
    text.extend(std::iter::repeat_n(b'a', MAX_LINE_BYTES as usize * 3));
    let opts = TableOptions {
        format: Format::Text,
        host_bits: HostBits::Reject,
        ..Default::default()
    };
    let l = load_table_from(Cursor::new(text), "t", &opts).unwrap();
    assert_eq!(l.routes.len(), 1);
    let d = l.report.damage.unwrap();
    assert_eq!(
        d.kind,
        DamageKind::LineTooLong {
            limit: MAX_LINE_BYTES
        }
    );
    assert_eq!(d.offset, 13);
}
