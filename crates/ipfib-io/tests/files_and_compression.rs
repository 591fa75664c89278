//! Files on disk: gzip detected by magic bytes, damaged streams, other
//! compressions refused, unreadable paths.

mod common;

use common::{gzip, read_error, Scratch};
use ipfib_io::{open_maybe_compressed, read_routes, Format, LoadOptions, ReadError};
use std::io::Read;

const TABLE: &str = "# t\n10.0.0.0/8 1\n2001:db8::/32 2\n10.0.0.0/8 3\n";

/// A table long enough that damage in the middle leaves whole lines before it.
fn big_table() -> String {
    (0..20_000u32)
        .map(|i| {
            format!(
                "{}.{}.{}.0/24 {}\n",
                1 + i / 65536,
                (i / 256) % 256,
                i % 256,
                i
            )
        })
        .collect()
}

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
    let ReadError::DamagedGzip { line, .. } = e else {
        panic!("wrong error {e:?}");
    };
    assert!(line > 1 && line <= 20_000, "line {line}");
    let want = format!("{}: damaged gzip stream (at line {line}): ", path.display());
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
        assert!(matches!(e, ReadError::DamagedGzip { .. }), "{name}: {e:?}");
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
    assert!(matches!(e, ReadError::DamagedGzip { .. }), "{e:?}");
    assert!(
        routes > 1000,
        "the lines before the damage were read: {routes}"
    );

    // Garbage after a complete member is damage too, not silently ignored.
    let mut tail = gzip(TABLE.as_bytes());
    tail.extend_from_slice(b"garbage");
    let path = s.write("tail.gz", &tail);
    let (e, _) = read_error(&path, &LoadOptions::default());
    assert!(matches!(e, ReadError::DamagedGzip { line: 5, .. }), "{e:?}");
}

#[test]
fn bzip2_zstd_and_xz_are_refused_by_name() {
    let s = Scratch::new("bz");
    for (magic, name) in [
        (&b"BZh91AY&SY\x00\x01"[..], "bzip2"),
        (&b"\x28\xb5\x2f\xfd\x00"[..], "zstd"),
        (&b"\xfd7zXZ\x00\x00"[..], "xz"),
    ] {
        let path = s.write("table.txt", magic);
        let (e, msg) = read_error(&path, &LoadOptions::default());
        assert!(matches!(e, ReadError::UnsupportedCompression { .. }));
        assert_eq!(
            msg,
            format!(
                "{}: {name}-compressed input is not supported yet",
                path.display()
            )
        );
        assert!(open_maybe_compressed(&path).is_err());
    }
}

#[test]
fn real_bzip2_mrt_file_is_refused_by_name() {
    let path = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/bview.20140112.1600.3samples.mrt.bz2"
    ));
    if !path.exists() {
        eprintln!("SKIPPED: ../shared/data not found");
        return;
    }
    let (_, msg) = read_error(path, &LoadOptions::default());
    assert!(
        msg.ends_with(": bzip2-compressed input is not supported yet"),
        "{msg}"
    );
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
