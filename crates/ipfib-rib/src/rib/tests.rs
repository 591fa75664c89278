//! Unit tests of the RIB's internals: layout sizes and a writer race
//! replayed step by step.

use super::*;
use crate::routelist::List;

/// A full table holds a million of these: the route list's tree form
/// must not make every prefix pay for it (a list is no bigger than a
/// boxed slice).
#[test]
fn a_route_list_costs_no_more_than_an_array() {
    use std::mem::size_of;
    assert_eq!(size_of::<List<Entry>>(), size_of::<Box<[Entry]>>());
    // The prefix, the best entry inline, the list and the tag.
    assert!(size_of::<Routes>() <= 96, "{}", size_of::<Routes>());
}

/// The interleaving in which a writer that saw its prefix's slot freed
/// resumes after the id was handed back to the same prefix, replayed step
/// by step (the real-time race is too narrow to hit reliably).
mod writer_race {
    use super::*;
    use crate::attrs::AttrsRef;
    use crate::peers::{PeerKey, RibKind};

    fn key(i: u32) -> PeerKey {
        PeerKey {
            peer_type: 0,
            distinguisher: 0,
            address: "127.0.0.1".parse().unwrap(),
            asn: 65000,
            bgp_id: i,
            rib: RibKind::PrePolicy,
        }
    }

    #[test]
    fn a_stale_writer_never_removes_a_reallocated_entry() {
        let rib = Rib::new();
        let (a, b, c) = (
            rib.add_peer(1, key(1)).unwrap(),
            rib.add_peer(1, key(2)).unwrap(),
            rib.add_peer(1, key(3)).unwrap(),
        );
        let set = rib.intern(&AttrsRef::default());
        let p: AnyPrefix = "10.0.0.0/24".parse().unwrap();
        rib.announce(&a, p, 0, &set).unwrap();
        rib.sync();
        // T1 (peer B's writer, in `edit`): reads p's id from the map ...
        let t1_id = *rib.inner.ids.pin().get(&p).unwrap();
        // ... peer A withdraws, the FIB thread frees the id ...
        assert!(rib.withdraw(&a, p, 0));
        rib.sync();
        // ... T1 loads the slot: empty, so it heads for `remove_if`; paused.
        assert!(rib.inner.slot(t1_id).unwrap().load().is_none());
        // T2 (peer C) announces p: the free list (LIFO) hands back t1_id.
        rib.announce(&c, p, 0, &set).unwrap();
        assert_eq!(*rib.inner.ids.pin().get(&p).unwrap(), t1_id);
        // T1 resumes with its stale observation: `edit` drops the map
        // entry only while the slot does not hold p, so T2's live entry
        // stays ...
        rib.inner.drop_stale(p, t1_id);
        assert_eq!(rib.inner.ids.pin().get(&p), Some(&t1_id));
        // ... and T1's retry finds it and adds B's route beside C's.
        rib.announce(&b, p, 0, &set).unwrap();
        rib.sync();
        // Had the entry gone, C's route would live in an orphaned slot:
        // lost to exact queries, and C's withdraw could not find it.
        assert_eq!(rib.routes(&p).len(), 2, "peer C's route lost");
        assert!(rib.withdraw(&c, p, 0), "peer C cannot withdraw its route");
    }
}
