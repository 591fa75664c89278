#![no_main]
//! The one BGP decoder (`ipfib_io::bgp`) on arbitrary bytes, through every
//! entry point: UPDATEs under each encoding a session can have, OPENs,
//! MRT RIB entries' attributes and the MRT record bodies that carry BGP.
//! Besides not panicking, what callers rely on must hold.

use ipfib_io::bgp::{self, mrt, ErrorAction, Update, WireConfig};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut u = Update::default();
    for (four_octet, addpath) in [(true, false), (false, false), (true, true)] {
        let cfg = WireConfig {
            four_octet,
            addpath_v4: addpath,
            addpath_v6: addpath,
            addpath_more: if addpath { 0x3f } else { 0 },
        };
        if bgp::decode_update(data, &cfg, &mut u).is_ok() {
            check(&u, addpath);
        }
    }
    let _ = bgp::decode_open(data);
    for four_octet in [true, false] {
        if bgp::decode_rib_entry_attrs(data, four_octet, &mut u).is_ok() {
            assert!(u.announced.is_empty() && u.withdrawn.is_empty());
            check(&u, false);
        }
    }
    let mut entries = Vec::new();
    for subtype in 0..13 {
        if let Ok(Some(_)) = mrt::rib_record(subtype, data, &mut entries) {
            for e in &entries {
                assert!(e.attrs.start <= e.attrs.end && e.attrs.end <= data.len());
                assert!(e.at < data.len());
            }
        }
        if let Ok(Some(t)) = mrt::table_dump(subtype, data) {
            assert!(t.attrs.len() < data.len());
        }
        if let Ok(Some(mrt::Bgp4mp::Message { message, .. })) = mrt::bgp4mp(subtype, data) {
            assert!(message.len() < data.len());
        }
    }
    if let Ok(t) = mrt::peer_index_table(data) {
        assert!(t.peers.len() * 11 <= data.len());
    }
});

/// What a decoded UPDATE promises.
fn check(u: &Update, addpath: bool) {
    assert!(u.errors.len() <= 16, "errors are bounded");
    assert!(u.mp_announced <= u.announced.len());
    if u.treat_as_withdraw {
        assert!(u.announced.is_empty() && u.vpn_announced.is_empty());
        assert!(u.labeled_announced.is_empty());
        assert!(u
            .errors
            .iter()
            .any(|e| e.action == ErrorAction::TreatAsWithdraw));
    }
    if !addpath {
        assert!(u
            .announced
            .iter()
            .chain(&u.withdrawn)
            .all(|&(_, id)| id == 0));
    }
    for (p, _) in u.announced.iter().chain(&u.withdrawn) {
        assert!(p.len() <= if p.family() == 4 { 32 } else { 128 });
    }
    // The AS path's segment headers count the words that follow.
    let mut rest = &u.as_path[..];
    while let Some((&head, tail)) = rest.split_first() {
        let n = (head & 0xffff) as usize;
        assert!(n <= tail.len(), "segment header past the path");
        rest = &tail[n..];
    }
}
