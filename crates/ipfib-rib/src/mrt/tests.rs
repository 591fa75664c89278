use std::path::Path;
use std::sync::Arc;

use ipfib_io::bgp::mrt::{self, RIB_IPV4_UNICAST};

use super::dump::{encode_as_path, put_attr, COMMUNITIES, OPTIONAL_TRANSITIVE};
use super::load::Loader;
use crate::attrs::{AsPath, AS_SEQUENCE, AS_SET};
use crate::rib::Rib;

fn path(segments: &[(u8, &[u32])]) -> AsPath {
    AsPath(Arc::from(AsPath::encode(segments.iter().copied())))
}

#[test]
fn as_path_sequences_split_at_255_and_big_sets_are_refused() {
    let long: Vec<u32> = (0..300).collect();
    let mut out = Vec::new();
    encode_as_path(&path(&[(AS_SEQUENCE, &long)]), &mut out).unwrap();
    assert_eq!(out.len(), 2 + 255 * 4 + 2 + 45 * 4);
    assert_eq!(&out[..2], &[AS_SEQUENCE, 255]);
    assert_eq!(&out[2 + 255 * 4..2 + 255 * 4 + 2], &[AS_SEQUENCE, 45]);
    let err = encode_as_path(&path(&[(AS_SET, &long)]), &mut out).unwrap_err();
    assert!(err.contains("set of 300"), "{err}");
}

#[test]
fn long_attributes_take_the_extended_length_flag() {
    let mut out = Vec::new();
    put_attr(&mut out, OPTIONAL_TRANSITIVE, COMMUNITIES, &[7; 256]).unwrap();
    assert_eq!(&out[..4], &[0xd0, COMMUNITIES, 1, 0]);
    assert_eq!(out.len(), 4 + 256);
    out.clear();
    put_attr(&mut out, OPTIONAL_TRANSITIVE, COMMUNITIES, &[7; 255]).unwrap();
    assert_eq!(&out[..3], &[0xc0, COMMUNITIES, 255]);
    assert!(put_attr(&mut out, 0xc0, 8, &vec![0; 70_000]).is_err());
}

/// RIB entry attributes go through BMP's decoder: framing errors and
/// RFC 7606 treat-as-withdraw skip the entry, with the offset; an
/// attribute discarded is counted and the route kept.
#[test]
fn entry_attributes_errors_skip_or_discard() {
    let rib = Rib::new();
    let mut l = Loader::new(Path::new("x.mrt"), &rib);
    assert!(l.decode(&[0x40, 1, 1, 0], true).is_ok());
    let e = l.decode(&[0x40, 1, 1, 0, 0x40, 2, 9, 1], true).unwrap_err();
    assert!(
        e.contains("runs past the end") && e.contains("(attribute byte 4)"),
        "{e}"
    );
    assert!(l.decode(&[0x50, 2, 1], true).is_err());
    // ORIGIN 5: treat-as-withdraw, the entry goes.
    let e = l.decode(&[0x40, 1, 1, 5], true).unwrap_err();
    assert!(e.contains("ORIGIN 5 (attribute byte 0)"), "{e}");
    // A malformed AGGREGATOR (length 3): dropped, the route kept.
    assert!(l
        .decode(&[0x40, 1, 1, 2, 0xc0, 7, 3, 1, 2, 3], true)
        .is_ok());
    assert_eq!(l.report.attrs_discarded, 1);
    assert_eq!(l.update.origin, crate::attrs::Origin::Incomplete);
}

#[test]
fn rib_record_framing_errors_name_the_field() {
    let mut entries = Vec::new();
    // Sequence, /24 prefix, one entry whose attributes are cut.
    let body = [0, 0, 0, 1, 24, 10, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 1];
    let e = mrt::rib_record(RIB_IPV4_UNICAST, &body, &mut entries)
        .unwrap_err()
        .brief();
    assert!(e.contains("entry 0: attributes needs 9 bytes"), "{e}");
    let e = mrt::rib_record(RIB_IPV4_UNICAST, &[0, 0, 0, 1, 33, 0], &mut entries)
        .unwrap_err()
        .brief();
    assert!(e.contains("prefix length 33"), "{e}");
}
