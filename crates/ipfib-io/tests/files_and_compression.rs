//! Files on disk: gzip detected by magic bytes, damaged streams, other
//! compressions refused, unreadable paths.

mod common;

use common::{big_table, gzip, read_error, Scratch};
use ipfib_io::{open_maybe_compressed, read_routes, Format, LoadOptions, ReadError};
use std::io::Read;

const TABLE: &str = "# t\n10.0.0.0/8 1\n2001:db8::/32 2\n10.0.0.0/8 3\n";

#[test]
fn gzip_is_detected_by_magic_not_by_name() {
    let s = Scratch::new("gz");
    let plain = read_routes(
        &s.write("plain.gz", TABLE.as_bytes()),
        &LoadOptions::default(),
    )
    .unwrap();
    let gz = read_routes(
        &s.write_gz("table.txt", TABLE.as_bytes()),
        &LoadOptions::default(),
    )
    .unwrap();
    assert_eq!(plain, gz);
    assert_eq!(gz.routes.len(), 3);
    assert_eq!(gz.lines, 4);
    assert_eq!(gz.routes[2].value, "3");
}

#[test]
fn concatenated_gzip_members_are_one_stream() {
    let s = Scratch::new("multigz");
    let mut bytes = gzip(b"10.0.0.0/8 1\n10.1.0.0/16 ");
    bytes.extend(gzip(b"2\n::/0 3\n"));
    let loaded = read_routes(&s.write("multi.gz", &bytes), &LoadOptions::default()).unwrap();
    let values: Vec<&str> = loaded.routes.iter().map(|r| r.value.as_str()).collect();
    assert_eq!(values, ["1", "2", "3"]);
}

#[test]
fn gzip_ipasn_is_sniffed_through_decompression() {
    let s = Scratch::new("gzipasn");
    let path = s.write_gz("x.dat.gz", b"; IP-ASN32-DAT file\n1.0.0.0/24\t15169\n");
    let loaded = read_routes(&path, &LoadOptions::default()).unwrap();
    assert_eq!(loaded.format, Format::Ipasn);
    assert_eq!(loaded.routes.len(), 1);
}

#[test]
fn open_maybe_compressed_yields_the_same_text() {
    let s = Scratch::new("open");
    for path in [
        s.write("a", TABLE.as_bytes()),
        s.write_gz("b", TABLE.as_bytes()),
    ] {
        let mut text = String::new();
        open_maybe_compressed(&path)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, TABLE);
    }
    // Shorter than any magic.
    let mut text = String::new();
    open_maybe_compressed(&s.write("tiny", b"\x1f"))
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(text, "\x1f");
}

#[test]
fn truncated_gzip_is_damage_naming_the_file_and_line() {
    let s = Scratch::new("trunc");
    let table = big_table();
    let gz = gzip(table.as_bytes());
    let path = s.write("cut.gz", &gz[..gz.len() / 2]);
    let (e, msg) = read_error(&path, &LoadOptions::default());
    let ReadError::DamagedStream { line, offset, .. } = e else {
        panic!("wrong error {e:?}");
    };
    assert!(line > 1 && line <= 20_000, "line {line}");
    // Every line of big_table() before `line` is complete.
    let want_offset: usize = big_table()
        .lines()
        .take(line as usize - 1)
        .map(|l| l.len() + 1)
        .sum();
    assert_eq!(offset, want_offset as u64);
    let want = format!(
        "{}: damaged gzip stream (at line {line}, byte {offset} decompressed): ",
        path.display()
    );
    assert!(msg.starts_with(&want), "{msg}");
    assert_eq!(e.line(), None, "damage ends the read: no line error");
}

#[test]
fn corrupt_gzip_is_damage_not_a_panic() {
    let s = Scratch::new("corrupt");
    let gz = gzip(big_table().as_bytes());
    // Flip bytes in the deflate data, and separately in the CRC trailer.
    let mut middle = gz.clone();
    for b in middle.iter_mut().skip(gz.len() / 2).take(16) {
        *b ^= 0x5a;
    }
    let mut trailer = gz.clone();
    let n = trailer.len();
    trailer[n - 8] ^= 0xff;
    let mut header = gz.clone();
    header[2] = 7; // compression method other than deflate
    for (name, bytes) in [
        ("middle.gz", middle),
        ("crc.gz", trailer),
        ("header.gz", header),
    ] {
        let path = s.write(name, &bytes);
        let (e, msg) = read_error(&path, &LoadOptions::default());
        assert!(
            matches!(e, ReadError::DamagedStream { .. }),
            "{name}: {e:?}"
        );
        assert!(
            msg.starts_with(&format!("{}: damaged gzip stream", path.display())),
            "{msg}"
        );
    }
    // Streaming on past bad lines still ends in the damage report.
    let path = s.dir.join("middle.gz");
    let mut routes = 0;
    let e = ipfib_io::for_each_route(&path, &LoadOptions::default(), |r| {
        routes += u64::from(r.is_ok());
        Ok(())
    })
    .unwrap_err();
    assert!(matches!(e, ReadError::DamagedStream { .. }), "{e:?}");
    assert!(
        routes > 1000,
        "the lines before the damage were read: {routes}"
    );

    // Garbage after a complete member is damage too, not silently ignored.
    let mut tail = gzip(TABLE.as_bytes());
    tail.extend_from_slice(b"garbage");
    let path = s.write("tail.gz", &tail);
    let (e, _) = read_error(&path, &LoadOptions::default());
    assert!(
        matches!(e, ReadError::DamagedStream { line: 5, .. }),
        "{e:?}"
    );
}

#[test]
fn xz_is_refused_by_name() {
    let s = Scratch::new("xz");
    let path = s.write("table.txt", b"\xfd7zXZ\x00\x00");
    let (e, msg) = read_error(&path, &LoadOptions::default());
    assert!(matches!(e, ReadError::UnsupportedCompression { .. }));
    assert_eq!(
        msg,
        format!("{}: xz-compressed input is not supported", path.display())
    );
    assert!(open_maybe_compressed(&path).is_err());
}

#[test]
fn bzip2_and_zstd_are_decoded_by_magic() {
    let s = Scratch::new("bz");
    let bz = common::bzip2(TABLE.as_bytes());
    let zst = common::zstd(TABLE.as_bytes());
    // Two bzip2 streams / zstd frames back to back read as one stream.
    let bz2 = [bz.clone(), bz.clone()].concat();
    let zst2 = [zst.clone(), zst.clone()].concat();
    for (name, bytes, copies) in [("a", bz, 1), ("b", zst, 1), ("c", bz2, 2), ("d", zst2, 2)] {
        let path = s.write(name, &bytes);
        let loaded = read_routes(&path, &LoadOptions::default()).unwrap();
        assert_eq!(loaded.routes.len(), 3 * copies, "{name}");
        let mut text = String::new();
        open_maybe_compressed(&path)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, TABLE.repeat(copies), "{name}");
    }
}

#[test]
fn damaged_bzip2_and_zstd_are_damage_not_a_panic() {
    let s = Scratch::new("bzdamage");
    let table = big_table();
    for (name, bytes) in [
        ("cut.bz2", common::bzip2(table.as_bytes())),
        ("cut.zst", common::zstd(table.as_bytes())),
    ] {
        let cut = &bytes[..bytes.len() * 2 / 3];
        let path = s.write(name, cut);
        let (e, msg) = read_error(&path, &LoadOptions::default());
        assert!(
            matches!(e, ReadError::DamagedStream { .. }),
            "{name}: {e:?}"
        );
        assert!(msg.contains("damaged"), "{msg}");
        let mut flipped = bytes.clone();
        for b in flipped.iter_mut().skip(bytes.len() / 2).take(8) {
            *b ^= 0xa5;
        }
        let path = s.write(name, &flipped);
        assert!(
            read_routes(&path, &LoadOptions::default()).is_err(),
            "{name}"
        );
    }
}

#[test]
fn unreadable_paths_are_io_errors_naming_the_path() {
    let s = Scratch::new("io");
    let missing = s.dir.join("missing.txt");
    let (e, msg) = read_error(&missing, &LoadOptions::default());
    assert!(matches!(e, ReadError::Io { .. }));
    assert_eq!(
        msg,
        format!(
            "{}: No such file or directory (os error 2)",
            missing.display()
        )
    );
    assert_eq!(e.line(), None);

    let (e, msg) = read_error(&s.dir, &LoadOptions::default());
    assert!(matches!(e, ReadError::Io { .. }));
    assert!(msg.starts_with(&format!("{}: ", s.dir.display())), "{msg}");
    assert!(msg.contains("os error 21"), "{msg}");

    let err = open_maybe_compressed(&missing)
        .err()
        .expect("missing file opens");
    assert!(matches!(err, ReadError::Io { .. }));
}

#[test]
fn relative_paths_are_shown_as_given() {
    let e = read_routes(
        std::path::Path::new("no/such/routes.txt"),
        &LoadOptions::default(),
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("no/such/routes.txt: "), "{e}");
}

#[test]
fn line_errors_in_files_name_the_path() {
    let s = Scratch::new("lineerr");
    let path = s.write_gz("routes.txt.gz", b"10.0.0.0/8 1\n\n10.0.0.1/8 1\n");
    let (_, msg) = read_error(&path, &LoadOptions::default());
    assert_eq!(
        msg,
        format!(
            "{}:3: host bits set in 10.0.0.1/8 (did you mean 10.0.0.0/8?)",
            path.display()
        )
    );
}

#[cfg(unix)]
#[test]
fn unreadable_permission_is_an_io_error() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scratch::new("perm");
    let path = s.write("secret.txt", TABLE.as_bytes());
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::File::open(&path).is_ok() {
        // Running as root: permissions do not stop us, nothing to test.
        eprintln!("SKIPPED: permission test (running as a user that ignores permissions)");
        return;
    }
    let (e, msg) = read_error(&path, &LoadOptions::default());
    assert!(matches!(e, ReadError::Io { .. }));
    assert!(msg.contains("Permission denied"), "{msg}");
}
