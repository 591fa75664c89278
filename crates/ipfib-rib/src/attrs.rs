//! Path attributes, interned once for the whole RIB.
//!
//! Real tables share attributes heavily (the 2026 RouteViews dump: 679K
//! routes, 117K distinct attribute sets, 93K distinct AS paths), so a route
//! holds one pointer to an interned [`AttrSet`], and an attribute set holds
//! pointers to interned AS paths and community lists. Interning happens
//! once per BGP UPDATE (every NLRI of a message shares its attributes), not
//! once per route.
//!
//! Lifetime: a route entry owns an `Arc<AttrSet>`, so no reader can ever
//! see another route's attributes through a reused index (the bug akvorado
//! fixed with generation numbers cannot happen here: there are no indices).
//! The interner keeps one reference of its own; [`Interner::purge`] drops
//! entries nobody else holds, which gives their memory back.
//!
//! Purges run as routes let go of their sets, amortised: the RIB reports
//! every reference it releases (a route replaced, withdrawn or swept) to
//! [`Attrs::released`], and once the releases since the last purge reach
//! half the sets held ([`PURGE_FRACTION`], at least [`PURGE_MIN`]) the
//! caller purges. A purge costs a walk of every interned value, paid for
//! by the releases before it, so a route pays O(1) amortised; and the sets
//! nobody holds never outnumber the sets in use (plus [`PURGE_MIN`]).

use std::borrow::Borrow;
use std::collections::HashSet;
use std::hash::{BuildHasher, Hash};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ipfib_io::bgp::Update;
pub use ipfib_io::bgp::{
    AsPath, Origin, Segment, Segments, AS_CONFED_SEQUENCE, AS_CONFED_SET, AS_SEQUENCE, AS_SET,
};

/// The attributes of a route that the RIB keeps. Everything else a BGP
/// UPDATE carries (extended communities, aggregator, unknown attributes)
/// is counted and dropped.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct AttrSet {
    pub as_path: AsPath,
    /// RFC 1997 communities, as sent.
    pub communities: Arc<[u32]>,
    /// RFC 8092 large communities, as sent.
    pub large_communities: Arc<[[u32; 3]]>,
    /// The next hop (IPv6: the global address of MP_REACH_NLRI).
    pub next_hop: Option<IpAddr>,
    pub origin: Origin,
    pub med: Option<u32>,
    pub local_pref: Option<u32>,
    /// `as_path.origin_asn()`, kept beside the other scalars so a lookup
    /// that wants the origin does not follow the path's pointer.
    pub origin_asn: Option<u32>,
}

/// Whether a table holding `len` values has little room left for more
/// (`capacity`: values plus the inserts it takes before it must rehash).
/// Removals leave tombstones that eat that room, and a table out of room
/// and more than half full doubles: after months of churn a table would
/// be twice a fresh one's size for the same values. A purge rebuilds a
/// crowded shard instead (the purge has just walked it: the rebuild is
/// one more walk of the same length).
fn crowded(capacity: usize, len: usize) -> bool {
    capacity.saturating_sub(len) < len / 4
}

/// Capacity to rebuild a table of `len` values with: room for a quarter
/// more.
fn roomy(len: usize) -> usize {
    len + len / 4 + 1
}

/// Shards of an interner: writers of different sessions rarely meet on one.
const SHARDS: usize = 64;

/// A concurrent set of shared values: equal values share one `Arc`.
/// Only writers (route ingest) use it; readers never touch it.
pub struct Interner<T: ?Sized> {
    shards: Box<[Shard<T>]>,
    hasher: Hasher,
}

type Hasher = foldhash::fast::RandomState;
type Shard<T> = Mutex<HashSet<Arc<T>, Hasher>>;

impl<T: ?Sized + Hash + Eq> Interner<T> {
    pub fn new() -> Self {
        Interner {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(HashSet::with_hasher(Hasher::default())))
                .collect(),
            hasher: Hasher::default(),
        }
    }

    fn shard<Q: ?Sized + Hash>(&self, q: &Q) -> &Shard<T> {
        let h = self.hasher.hash_one(q) as usize;
        &self.shards[h % SHARDS]
    }

    /// The shared copy of `value`, made by `make` when it is new.
    pub fn intern<Q>(&self, value: &Q, make: impl FnOnce(&Q) -> Arc<T>) -> Arc<T>
    where
        Q: ?Sized + Hash + Eq,
        Arc<T>: Borrow<Q>,
    {
        // A poisoned shard only means another writer panicked mid-insert
        // of a HashSet, which leaves the set consistent: keep using it.
        let mut set = self.shard(value).lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = set.get(value) {
            return Arc::clone(v);
        }
        let v = make(value);
        set.insert(Arc::clone(&v));
        v
    }

    /// Room for `n` more values over all shards (a snapshot's load knows
    /// how many are coming: no table grows while it runs).
    pub(crate) fn reserve(&self, n: usize) {
        for shard in self.shards.iter() {
            shard
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .reserve(n / SHARDS + 1);
        }
    }

    /// Drop the values only the interner still holds; how many went.
    pub fn purge(&self) -> usize {
        let mut gone = 0;
        for shard in self.shards.iter() {
            let mut set = shard.lock().unwrap_or_else(|e| e.into_inner());
            let before = set.len();
            set.retain(|v| Arc::strong_count(v) > 1);
            gone += before - set.len();
            if crowded(set.capacity(), set.len()) {
                let old = std::mem::take(&mut *set);
                let mut fresh =
                    HashSet::with_capacity_and_hasher(roomy(old.len()), Hasher::default());
                fresh.extend(old);
                *set = fresh;
            }
        }
        gone
    }

    /// Values the shards' tables have room for.
    pub fn capacity(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).capacity())
            .sum()
    }

    /// Distinct values held.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).len())
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: ?Sized + Hash + Eq> Default for Interner<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// An attribute set's identity: its interned parts by address (equal
/// parts share one allocation, so equal addresses mean equal contents; the
/// set keeps its parts alive, so an address is never reused while the set
/// is in the table) and its scalars. Hashing it costs a few words, not the
/// AS path and communities again.
#[derive(PartialEq, Eq, Hash)]
struct SetKey {
    parts: (usize, usize, usize),
    next_hop: Option<IpAddr>,
    origin: Origin,
    med: Option<u32>,
    local_pref: Option<u32>,
}

impl SetKey {
    fn of(s: &AttrSet) -> SetKey {
        SetKey {
            parts: (
                Arc::as_ptr(&s.as_path.0) as *const u32 as usize,
                Arc::as_ptr(&s.communities) as *const u32 as usize,
                Arc::as_ptr(&s.large_communities) as *const [u32; 3] as usize,
            ),
            next_hop: s.next_hop,
            origin: s.origin,
            med: s.med,
            local_pref: s.local_pref,
        }
    }
}

/// Interned attribute sets: bare `Arc`s (8 bytes a set), found by
/// [`SetKey`].
struct Sets {
    shards: Box<[Mutex<hashbrown::HashTable<Arc<AttrSet>>>]>,
    hasher: Hasher,
}

impl Default for Sets {
    fn default() -> Self {
        Sets {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(hashbrown::HashTable::new()))
                .collect(),
            hasher: Hasher::default(),
        }
    }
}

impl Sets {
    /// The shared copy of `set`, and whether it is new.
    fn intern(&self, set: AttrSet) -> (Arc<AttrSet>, bool) {
        let key = SetKey::of(&set);
        let hash = |s: &Arc<AttrSet>| self.hasher.hash_one(SetKey::of(s));
        let h = self.hasher.hash_one(&key);
        let mut t = self.shards[(h as usize) % SHARDS]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        match t.entry(h, |s| SetKey::of(s) == key, hash) {
            hashbrown::hash_table::Entry::Occupied(o) => (Arc::clone(o.get()), false),
            hashbrown::hash_table::Entry::Vacant(v) => {
                (Arc::clone(v.insert(Arc::new(set)).get()), true)
            }
        }
    }

    /// Room for `n` more sets over all shards.
    fn reserve(&self, n: usize) {
        let hash = |s: &Arc<AttrSet>| self.hasher.hash_one(SetKey::of(s));
        for shard in self.shards.iter() {
            shard
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .reserve(n / SHARDS + 1, hash);
        }
    }

    /// Drop the sets only the interner holds: (dropped, left).
    ///
    /// A count of 1 cannot rise under the shard's lock: the only other
    /// way to a set is through this table, whose lookups take the lock.
    fn purge(&self) -> (usize, usize) {
        let (mut gone, mut left) = (0, 0);
        for shard in self.shards.iter() {
            let mut t = shard.lock().unwrap_or_else(|e| e.into_inner());
            let before = t.len();
            t.retain(|v| Arc::strong_count(v) > 1);
            gone += before - t.len();
            left += t.len();
            if crowded(t.capacity(), t.len()) {
                let hash = |s: &Arc<AttrSet>| self.hasher.hash_one(SetKey::of(s));
                let old = std::mem::take(&mut *t);
                let mut fresh = hashbrown::HashTable::with_capacity(roomy(old.len()));
                for v in old {
                    fresh.insert_unique(hash(&v), v, hash);
                }
                *t = fresh;
            }
        }
        (gone, left)
    }

    fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).len())
            .sum()
    }
}

/// Releases below which no purge is due, whatever the sets held.
pub const PURGE_MIN: u64 = 1024;

/// A purge is due once the releases since the last reach the sets held
/// divided by this (see the module documentation). Decision: a half; an
/// eighth (four times the purges) left fewer holes in the heap but no
/// clearly smaller process in the month's soak (docs/architecture.md).
pub const PURGE_FRACTION: u64 = 2;

/// Every interner of a RIB, and the one way attributes enter it.
#[derive(Default)]
pub struct Attrs {
    paths: Interner<[u32]>,
    communities: Interner<[u32]>,
    large: Interner<[[u32; 3]]>,
    sets: Sets,
    /// Sets held, as of the last intern or purge (approximate between).
    held: AtomicUsize,
    /// References released by routes since the last purge.
    released: AtomicU64,
    /// A purge by [`Attrs::released`] is running.
    purging: std::sync::atomic::AtomicBool,
    /// Purges run (by [`Attrs::released`] or a sweep).
    purges: AtomicU64,
    /// Values (sets, paths, lists) purges dropped, in all.
    purged: AtomicU64,
}

/// Attributes as decoded, borrowed from the message (nothing allocated
/// until they turn out to be new).
#[derive(Clone, Copy, Debug, Default)]
pub struct AttrsRef<'a> {
    /// Encoded as [`AsPath`]'s words.
    pub as_path: &'a [u32],
    pub communities: &'a [u32],
    pub large_communities: &'a [[u32; 3]],
    pub next_hop: Option<IpAddr>,
    pub origin: Origin,
    pub med: Option<u32>,
    pub local_pref: Option<u32>,
}

impl<'a> From<&'a Update> for AttrsRef<'a> {
    /// The attributes of a decoded UPDATE as the RIB interns them (the
    /// next hop that goes with the announced family: MP_REACH's when
    /// present; an UPDATE with both kinds of NLRI needs both, see
    /// [`Update::mp_announced`]).
    fn from(u: &'a Update) -> Self {
        AttrsRef {
            as_path: &u.as_path,
            communities: &u.communities,
            large_communities: &u.large_communities,
            next_hop: u.next_hop(),
            origin: u.origin,
            med: u.med,
            local_pref: u.local_pref,
        }
    }
}

impl AttrsRef<'_> {
    /// Whether `set` holds exactly these attributes (a session's cheap
    /// check that the next UPDATE repeats the previous one's attributes).
    pub fn matches(&self, set: &AttrSet) -> bool {
        self.next_hop == set.next_hop
            && self.origin == set.origin
            && self.med == set.med
            && self.local_pref == set.local_pref
            && *self.as_path == *set.as_path.0
            && *self.communities == *set.communities
            && *self.large_communities == *set.large_communities
    }
}

impl Attrs {
    /// The interned attribute set equal to `a`.
    pub fn intern(&self, a: &AttrsRef<'_>) -> Arc<AttrSet> {
        let as_path = AsPath(self.paths.intern(a.as_path, |p| Arc::from(p)));
        let set = AttrSet {
            origin_asn: as_path.origin_asn(),
            as_path,
            communities: self.communities.intern(a.communities, |c| Arc::from(c)),
            large_communities: self.large.intern(a.large_communities, |l| Arc::from(l)),
            next_hop: a.next_hop,
            origin: a.origin,
            med: a.med,
            local_pref: a.local_pref,
        };
        let (set, new) = self.sets.intern(set);
        if new {
            self.held.fetch_add(1, Ordering::Relaxed);
        }
        set
    }

    /// Room for `sets` more attribute sets (and as many AS paths: each set
    /// has one, most their own).
    pub(crate) fn reserve(&self, sets: usize) {
        self.sets.reserve(sets);
        self.paths.reserve(sets);
    }

    /// Drop attribute sets (then paths and lists) that no route holds.
    /// Releases counted while it runs stay counted (only those seen at
    /// its start are taken away), so they trigger the next purge.
    pub fn purge(&self) -> usize {
        let seen = self.released.load(Ordering::Relaxed);
        self.purges.fetch_add(1, Ordering::Relaxed);
        let (gone, left) = self.sets.purge();
        self.held.store(left, Ordering::Relaxed);
        let _ = self
            .released
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |r| {
                Some(r.saturating_sub(seen))
            });
        let gone = gone + self.paths.purge() + self.communities.purge() + self.large.purge();
        self.purged.fetch_add(gone as u64, Ordering::Relaxed);
        gone
    }

    /// `n` references to interned sets were dropped by routes (replaced,
    /// withdrawn, swept); purges when enough have been since the last
    /// purge (see the module documentation). Whether it purged.
    pub fn released(&self, n: u64) -> bool {
        if n == 0 {
            return false;
        }
        let now = self.released.fetch_add(n, Ordering::Relaxed) + n;
        let due = PURGE_MIN.max(self.held.load(Ordering::Relaxed) as u64 / PURGE_FRACTION);
        // Whoever finds the count at or past the threshold purges, one at
        // a time (a purge already running takes these releases' sets, or
        // leaves them counted for the next): the count never stays past
        // the threshold without a purge following.
        if now >= due
            && self
                .purging
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            self.purge();
            self.purging.store(false, Ordering::Release);
            return true;
        }
        false
    }

    /// Purges run so far.
    pub fn purges(&self) -> u64 {
        self.purges.load(Ordering::Relaxed)
    }

    /// Values (attribute sets, AS paths, community lists) purges dropped
    /// so far.
    pub fn purged(&self) -> u64 {
        self.purged.load(Ordering::Relaxed)
    }

    /// Room in the interners' tables (sets, paths, community lists, large
    /// lists): what their hash tables hold space for, which a purge does
    /// not shrink.
    pub fn capacities(&self) -> (usize, usize, usize, usize) {
        let sets = self
            .sets
            .shards
            .iter()
            .map(|t| t.lock().unwrap_or_else(|e| e.into_inner()).capacity())
            .sum();
        (
            sets,
            self.paths.capacity(),
            self.communities.capacity(),
            self.large.capacity(),
        )
    }

    /// Distinct (attribute sets, AS paths, community lists, large lists).
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        (
            self.sets.len(),
            self.paths.len(),
            self.communities.len(),
            self.large.len(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_path_segments_and_origin() {
        let words = AsPath::encode([(AS_SEQUENCE, &[1u32, 2, 3][..]), (AS_SET, &[7u32, 8][..])]);
        let p = AsPath(Arc::from(words));
        let segs: Vec<_> = p.segments().collect();
        assert_eq!(segs.len(), 2);
        assert_eq!(segs[0].asns, &[1, 2, 3]);
        assert_eq!(segs[1].kind, AS_SET);
        assert_eq!(p.selection_len(), 4);
        assert_eq!(p.origin_asn(), None, "aggregate with a set of two");
        assert_eq!(p.flat(), vec![1, 2, 3, 7, 8]);
        let q = AsPath(Arc::from(AsPath::encode([(
            AS_SEQUENCE,
            &[64500u32, 13335][..],
        )])));
        assert_eq!(q.origin_asn(), Some(13335));
        assert_eq!(AsPath::default().origin_asn(), None);
        let one = AsPath(Arc::from(AsPath::encode([
            (AS_SEQUENCE, &[1u32][..]),
            (AS_SET, &[9u32][..]),
        ])));
        assert_eq!(one.origin_asn(), Some(9));
    }

    #[test]
    fn interning_shares_and_purge_frees() {
        let a = Attrs::default();
        let path = AsPath::encode([(AS_SEQUENCE, &[1u32, 2][..])]);
        let r = AttrsRef {
            as_path: &path,
            communities: &[65001 << 16 | 100],
            ..Default::default()
        };
        let x = a.intern(&r);
        let y = a.intern(&r);
        assert!(Arc::ptr_eq(&x, &y));
        let other = AttrsRef { med: Some(5), ..r };
        let z = a.intern(&other);
        assert!(!Arc::ptr_eq(&x, &z));
        assert!(
            Arc::ptr_eq(&x.as_path.0, &z.as_path.0),
            "paths shared across sets"
        );
        assert_eq!(a.counts().0, 2);
        drop((x, y));
        assert_eq!(a.sets.purge(), (1, 1));
        assert_eq!(a.counts().0, 1);
        drop(z);
        a.purge();
        assert_eq!(a.counts(), (0, 0, 0, 0));
    }

    #[test]
    fn a_purge_is_due_at_a_fraction_of_the_sets_held() {
        let a = Attrs::default();
        let path = AsPath::encode([(AS_SEQUENCE, &[1u32][..])]);
        let n = 16 * PURGE_FRACTION as u32 * PURGE_MIN as u32;
        let sets: Vec<_> = (0..n)
            .map(|med| {
                a.intern(&AttrsRef {
                    as_path: &path,
                    med: Some(med),
                    ..Default::default()
                })
            })
            .collect();
        a.purge(); // `held` as of now: n sets
        assert_eq!(a.counts().0, n as usize);
        let due = u64::from(n) / PURGE_FRACTION;
        assert!(!a.released(due - 1), "purged before the fraction");
        assert!(a.released(1), "no purge at the fraction");
        assert_eq!(a.purges(), 2);
        drop(sets);
    }

    #[test]
    fn purges_leave_every_table_room_to_grow() {
        // Tables filled close to their capacity (as churn's tombstones
        // leave them): the purge rebuilds them with room for a quarter
        // more, so the next inserts neither double them nor find them
        // full; values are found again after the rebuild.
        let a = Attrs::default();
        let path = AsPath::encode([(AS_SEQUENCE, &[1u32][..])]);
        let set = |med: u32| {
            a.intern(&AttrsRef {
                as_path: &path,
                communities: &[med],
                med: Some(med),
                ..Default::default()
            })
        };
        let n = 27_000u32; // 64 shards of 448: most shards 90-98% full
        let live: Vec<_> = (0..n).map(set).collect();
        let crowded_shards = |a: &Attrs| {
            let sets = a.sets.shards.iter().filter(|t| {
                let t = t.lock().unwrap();
                crowded(t.capacity(), t.len())
            });
            let lists = a.communities.shards.iter().filter(|t| {
                let t = t.lock().unwrap();
                crowded(t.capacity(), t.len())
            });
            sets.count() + lists.count()
        };
        assert!(crowded_shards(&a) > 0, "the test fills no table");
        a.purge();
        assert_eq!(crowded_shards(&a), 0);
        assert_eq!(a.counts().0, n as usize);
        for (k, s) in live.iter().enumerate() {
            assert!(Arc::ptr_eq(s, &set(k as u32)), "set {k} interned twice");
        }
        assert_eq!(a.counts().0, n as usize);
    }
}
