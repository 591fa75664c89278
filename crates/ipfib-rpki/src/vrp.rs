//! Validated ROA payloads (VRPs) and route origin validation (RFC 6811).
//!
//! A [`VrpSet`] is the mutable set (what an RTR session or a file loader
//! edits: one hash insert or remove per VRP); [`Vrps`] is an immutable
//! snapshot of it built for lookups, which readers share through an `Arc`.
//!
//! The snapshot, per family: the distinct VRP prefixes sorted by (address,
//! length), each with the index of its *parent* (the longest other VRP
//! prefix covering it) and its `(asn, max_len)` entries. Every VRP prefix
//! covering a route's prefix `P/l` lies on one parent chain: binary-search
//! the last VRP prefix whose (address, length) is at most `P`'s, then
//! follow parents; the first one that covers `P` is the longest covering
//! VRP prefix and every parent above it covers `P` too (prefixes are either
//! nested or disjoint, and everything sorted between the longest covering
//! prefix and the search position starts inside it, so is its descendant).
//! A lookup is one binary search and a walk of at most the address width.

use std::net::IpAddr;

use hashbrown::HashSet;
use ipfib::addr::Addr;
use ipfib::prefix::{AnyPrefix, Prefix};

/// One validated ROA payload: `prefix` may be announced by `asn` with any
/// length up to `max_len`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Vrp {
    pub prefix: AnyPrefix,
    pub max_len: u8,
    pub asn: u32,
}

impl Vrp {
    /// A VRP, checked: `max_len` between the prefix's length and the
    /// family's width (RFC 6482 §3.3).
    pub fn new(prefix: AnyPrefix, max_len: u8, asn: u32) -> Result<Vrp, String> {
        let width = if prefix.family() == 4 { 32 } else { 128 };
        if max_len < prefix.len() || max_len > width {
            return Err(format!(
                "max length {max_len} outside {}..={width} for {prefix}",
                prefix.len()
            ));
        }
        Ok(Vrp {
            prefix,
            max_len,
            asn,
        })
    }
}

impl std::fmt::Display for Vrp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{} AS{}", self.prefix, self.max_len, self.asn)
    }
}

/// The origin AS of a route as RFC 6811 §2 derives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RouteOrigin {
    /// The rightmost ASN of a final AS_SEQUENCE, or the speaker's own AS.
    As(u32),
    /// "NONE": the final segment is an AS_SET. Matches no VRP.
    None,
}

/// The ROV state of a route (RFC 6811 §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rov {
    NotFound,
    Valid,
    /// Covered, but no covering VRP has the route's origin AS.
    InvalidOrigin,
    /// A covering VRP has the route's origin AS, but its max length is
    /// shorter than the route's prefix.
    InvalidLength,
}

impl Rov {
    /// Every state, in the order [`Rov::index`] numbers them.
    pub const ALL: [Rov; 4] = [
        Rov::NotFound,
        Rov::Valid,
        Rov::InvalidOrigin,
        Rov::InvalidLength,
    ];

    /// `"valid"`, `"invalid"` or `"not-found"`: the state's name in JSON,
    /// filters and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Rov::NotFound => "not-found",
            Rov::Valid => "valid",
            Rov::InvalidOrigin | Rov::InvalidLength => "invalid",
        }
    }

    /// Why an invalid route is invalid: `"as"` or `"length"`.
    pub fn reason(self) -> Option<&'static str> {
        match self {
            Rov::InvalidOrigin => Some("as"),
            Rov::InvalidLength => Some("length"),
            _ => None,
        }
    }

    pub fn is_invalid(self) -> bool {
        matches!(self, Rov::InvalidOrigin | Rov::InvalidLength)
    }

    /// 0..4, for per-state counters.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The mutable VRP set: what RTR and file loaders edit.
#[derive(Clone, Debug, Default)]
pub struct VrpSet {
    set: HashSet<Vrp>,
}

impl VrpSet {
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds `vrp`; false if it was there already.
    pub fn insert(&mut self, vrp: Vrp) -> bool {
        self.set.insert(vrp)
    }
    /// Removes `vrp`; false if it was not there.
    pub fn remove(&mut self, vrp: &Vrp) -> bool {
        self.set.remove(vrp)
    }
    pub fn contains(&self, vrp: &Vrp) -> bool {
        self.set.contains(vrp)
    }
    pub fn len(&self) -> usize {
        self.set.len()
    }
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }
    pub fn clear(&mut self) {
        self.set.clear()
    }
    pub fn iter(&self) -> impl Iterator<Item = &Vrp> + '_ {
        self.set.iter()
    }
    pub fn retain(&mut self, keep: impl FnMut(&Vrp) -> bool) {
        let mut keep = keep;
        self.set.retain(|v| keep(v))
    }
    /// The immutable, lookup-ready snapshot of the set as it is now.
    pub fn snapshot(&self) -> Vrps {
        Vrps::from_iter(self.set.iter().copied())
    }
}

impl Extend<Vrp> for VrpSet {
    fn extend<I: IntoIterator<Item = Vrp>>(&mut self, iter: I) {
        self.set.extend(iter)
    }
}

impl FromIterator<Vrp> for VrpSet {
    fn from_iter<I: IntoIterator<Item = Vrp>>(iter: I) -> Self {
        VrpSet {
            set: iter.into_iter().collect(),
        }
    }
}

const NONE: u32 = u32::MAX;

/// One VRP entry under a prefix: `(asn, max_len)`, sorted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    asn: u32,
    max_len: u8,
}

/// One family's side of a snapshot.
#[derive(Clone, Debug, Default)]
struct Side<A: Addr> {
    /// Distinct VRP prefixes, sorted by (address, length).
    prefixes: Vec<Prefix<A>>,
    /// The longest other VRP prefix covering each, or `NONE`.
    parent: Vec<u32>,
    /// `entries[first[i]..first[i + 1]]` belong to `prefixes[i]`.
    first: Vec<u32>,
    entries: Vec<Entry>,
}

impl<A: Addr> Side<A> {
    fn build(mut vrps: Vec<(Prefix<A>, Entry)>) -> Self {
        vrps.sort_unstable();
        vrps.dedup();
        let mut b = Builder::new(vrps.len(), vrps.len());
        for (p, e) in vrps {
            b.push(p, e);
        }
        b.finish()
    }

    /// This side with `removed` taken out and `added` put in (both sorted,
    /// no duplicates): one merge of the sorted arrays, no hashing and no
    /// sort of the whole (what a small RTR update costs).
    fn with_changes(&self, added: &[(Prefix<A>, Entry)], removed: &[(Prefix<A>, Entry)]) -> Self {
        let mut out = Builder::new(
            self.entries.len() + added.len(),
            self.prefixes.len() + added.len(),
        );
        let (mut a, mut r) = (0, 0);
        for (i, &p) in self.prefixes.iter().enumerate() {
            for &e in self.entries(i as u32) {
                let item = (p, e);
                while a < added.len() && added[a] < item {
                    out.push(added[a].0, added[a].1);
                    a += 1;
                }
                while r < removed.len() && removed[r] < item {
                    r += 1;
                }
                if r < removed.len() && removed[r] == item {
                    continue;
                }
                if a < added.len() && added[a] == item {
                    a += 1;
                }
                out.push(p, e);
            }
        }
        for &(p, e) in &added[a..] {
            out.push(p, e);
        }
        out.finish()
    }

    /// How many VRP prefixes sort at or before `p`: a binary search, or,
    /// when the previous answer `hint` is close (routes taken in prefix
    /// order), a few steps from it.
    fn position(&self, p: &Prefix<A>, hint: &mut usize) -> usize {
        let v = &self.prefixes;
        let h = (*hint).min(v.len());
        // The answer is h when v[h-1] <= p < v[h]; look a few steps ahead.
        let at = if h > 0 && v[h - 1] > *p {
            v.partition_point(|q| q <= p)
        } else {
            let end = (h + 8).min(v.len());
            let near = h + v[h..end].partition_point(|q| q <= p);
            if near < end || end == v.len() {
                near
            } else {
                end + v[end..].partition_point(|q| q <= p)
            }
        };
        *hint = at;
        at
    }

    /// The index of the longest VRP prefix covering `p`, or `NONE`.
    fn longest_covering(&self, p: &Prefix<A>) -> u32 {
        self.longest_covering_at(p, &mut 0)
    }

    fn longest_covering_at(&self, p: &Prefix<A>, hint: &mut usize) -> u32 {
        let at = self.position(p, hint);
        if at == 0 {
            return NONE;
        }
        let mut i = (at - 1) as u32;
        while i != NONE && !self.prefixes[i as usize].covers(p) {
            i = self.parent[i as usize];
        }
        i
    }

    fn entries(&self, i: u32) -> &[Entry] {
        let i = i as usize;
        &self.entries[self.first[i] as usize..self.first[i + 1] as usize]
    }

    fn validate(&self, p: &Prefix<A>, origin: RouteOrigin, hint: &mut usize) -> Rov {
        let mut i = self.longest_covering_at(p, hint);
        if i == NONE {
            return Rov::NotFound;
        }
        let mut state = Rov::InvalidOrigin;
        let asn = match origin {
            // AS 0 never matches (RFC 6483 §4, RFC 7607).
            RouteOrigin::As(a) if a != 0 => a,
            _ => return state,
        };
        while i != NONE {
            let es = self.entries(i);
            let from = es.partition_point(|e| e.asn < asn);
            for e in es[from..].iter().take_while(|e| e.asn == asn) {
                if p.len() <= e.max_len {
                    return Rov::Valid;
                }
                state = Rov::InvalidLength;
            }
            i = self.parent[i as usize];
        }
        state
    }

    fn covering(&self, p: &Prefix<A>, wrap: fn(Prefix<A>) -> AnyPrefix, out: &mut Vec<Vrp>) {
        let mut i = self.longest_covering(p);
        while i != NONE {
            let prefix = wrap(self.prefixes[i as usize]);
            for e in self.entries(i) {
                out.push(Vrp {
                    prefix,
                    max_len: e.max_len,
                    asn: e.asn,
                });
            }
            i = self.parent[i as usize];
        }
    }

    fn iter(&self, wrap: fn(Prefix<A>) -> AnyPrefix) -> impl Iterator<Item = Vrp> + '_ {
        self.prefixes.iter().enumerate().flat_map(move |(i, &p)| {
            self.entries(i as u32).iter().map(move |e| Vrp {
                prefix: wrap(p),
                max_len: e.max_len,
                asn: e.asn,
            })
        })
    }

    fn bytes(&self) -> usize {
        self.prefixes.capacity() * std::mem::size_of::<Prefix<A>>()
            + (self.parent.capacity() + self.first.capacity()) * 4
            + self.entries.capacity() * std::mem::size_of::<Entry>()
    }
}

/// Where [`Vrps::validate_at`] last searched, per family.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cursor {
    v4: usize,
    v6: usize,
}

/// Builds a [`Side`] from (prefix, entry) pairs pushed in sorted order,
/// without duplicates: the parent of each new prefix is the innermost
/// open prefix covering it.
struct Builder<A: Addr> {
    side: Side<A>,
    /// The chain of open prefixes covering the last one.
    stack: Vec<u32>,
}

impl<A: Addr> Builder<A> {
    fn new(entries: usize, prefixes: usize) -> Self {
        Builder {
            side: Side {
                prefixes: Vec::with_capacity(prefixes),
                parent: Vec::with_capacity(prefixes),
                first: Vec::with_capacity(prefixes + 1),
                entries: Vec::with_capacity(entries),
            },
            stack: Vec::new(),
        }
    }

    fn push(&mut self, p: Prefix<A>, e: Entry) {
        let side = &mut self.side;
        if side.prefixes.last() != Some(&p) {
            while let Some(&top) = self.stack.last() {
                if side.prefixes[top as usize].covers(&p) {
                    break;
                }
                self.stack.pop();
            }
            let i = side.prefixes.len() as u32;
            side.parent.push(self.stack.last().copied().unwrap_or(NONE));
            side.prefixes.push(p);
            side.first.push(side.entries.len() as u32);
            self.stack.push(i);
        }
        side.entries.push(e);
    }

    fn finish(mut self) -> Side<A> {
        self.side.first.push(self.side.entries.len() as u32);
        self.side
    }
}

/// An immutable VRP snapshot that answers "which VRPs cover this prefix"
/// and validates routes (RFC 6811).
#[derive(Clone, Debug, Default)]
pub struct Vrps {
    v4: Side<u32>,
    v6: Side<u128>,
}

/// One family's (prefix, entry) pairs.
type Items<A> = Vec<(Prefix<A>, Entry)>;

/// VRPs as (prefix, entry) pairs per family, in the order given.
fn split_families(vrps: impl IntoIterator<Item = Vrp>) -> (Items<u32>, Items<u128>) {
    let (mut v4, mut v6) = (Vec::new(), Vec::new());
    for v in vrps {
        let e = Entry {
            asn: v.asn,
            max_len: v.max_len,
        };
        match v.prefix {
            AnyPrefix::V4(p) => v4.push((p, e)),
            AnyPrefix::V6(p) => v6.push((p, e)),
        }
    }
    (v4, v6)
}

impl FromIterator<Vrp> for Vrps {
    fn from_iter<I: IntoIterator<Item = Vrp>>(iter: I) -> Self {
        let (v4, v6) = split_families(iter);
        Vrps {
            v4: Side::build(v4),
            v6: Side::build(v6),
        }
    }
}

impl Vrps {
    /// A new snapshot: this one with `removed` taken out and `added` put
    /// in (a VRP in both is added). One linear merge of the sorted arrays:
    /// for a small change to a large set, a few milliseconds where
    /// [`VrpSet::snapshot`] hashes and sorts everything.
    pub fn with_changes(&self, added: &[Vrp], removed: &[Vrp]) -> Vrps {
        fn split(vrps: &[Vrp]) -> (Items<u32>, Items<u128>) {
            let (mut v4, mut v6) = split_families(vrps.iter().copied());
            v4.sort_unstable();
            v4.dedup();
            v6.sort_unstable();
            v6.dedup();
            (v4, v6)
        }
        let (a4, a6) = split(added);
        let (mut r4, mut r6) = split(removed);
        // A VRP both added and removed stays.
        r4.retain(|x| a4.binary_search(x).is_err());
        r6.retain(|x| a6.binary_search(x).is_err());
        Vrps {
            v4: self.v4.with_changes(&a4, &r4),
            v6: self.v6.with_changes(&a6, &r6),
        }
    }

    /// The number of VRPs (distinct (prefix, max length, AS) triples).
    pub fn len(&self) -> usize {
        self.v4.entries.len() + self.v6.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Distinct VRP prefixes per family: `(IPv4, IPv6)`.
    pub fn prefix_counts(&self) -> (usize, usize) {
        (self.v4.prefixes.len(), self.v6.prefixes.len())
    }
    /// Heap bytes held.
    pub fn footprint_bytes(&self) -> usize {
        self.v4.bytes() + self.v6.bytes()
    }

    /// The RFC 6811 state of a route `prefix` originated by `origin`.
    pub fn validate(&self, prefix: &AnyPrefix, origin: RouteOrigin) -> Rov {
        self.validate_at(prefix, origin, &mut Cursor::default())
    }

    /// [`Vrps::validate`] remembering where it searched: routes taken in
    /// prefix order (a sorted table, a RIB walk) cost a few steps each
    /// instead of a binary search. Any order gives the same answers.
    pub fn validate_at(&self, prefix: &AnyPrefix, origin: RouteOrigin, cur: &mut Cursor) -> Rov {
        match prefix {
            AnyPrefix::V4(p) => self.v4.validate(p, origin, &mut cur.v4),
            AnyPrefix::V6(p) => self.v6.validate(p, origin, &mut cur.v6),
        }
    }

    /// Every VRP covering `prefix`, longest prefix first.
    pub fn covering(&self, prefix: &AnyPrefix) -> Vec<Vrp> {
        let mut out = Vec::new();
        match prefix {
            AnyPrefix::V4(p) => self.v4.covering(p, AnyPrefix::V4, &mut out),
            AnyPrefix::V6(p) => self.v6.covering(p, AnyPrefix::V6, &mut out),
        }
        out
    }

    /// Every VRP, IPv4 first, each family in (prefix, AS, max length) order.
    pub fn iter(&self) -> impl Iterator<Item = Vrp> + '_ {
        self.v4
            .iter(AnyPrefix::V4)
            .chain(self.v6.iter(AnyPrefix::V6))
    }
}

/// The RFC 6811 origin of a route whose AS path has `segments` (kind,
/// ASNs), received from a speaker of AS `speaker_as`: the rightmost ASN of
/// a final AS_SEQUENCE; NONE for a final AS_SET; the speaker's own AS for
/// an empty path or a final confederation segment.
pub fn route_origin<'a>(
    segments: impl IntoIterator<Item = (u8, &'a [u32])>,
    speaker_as: u32,
) -> RouteOrigin {
    path_origin(segments).unwrap_or(RouteOrigin::As(speaker_as))
}

/// [`route_origin`] of the path alone: `None` when the origin is the
/// speaker's own AS (an empty path, a final confederation segment), which
/// only the caller knows.
pub fn path_origin<'a>(segments: impl IntoIterator<Item = (u8, &'a [u32])>) -> Option<RouteOrigin> {
    let mut last = None;
    for (kind, asns) in segments {
        if !asns.is_empty() {
            last = Some((kind, asns));
        }
    }
    match last {
        Some((crate::AS_SEQUENCE, asns)) => asns.last().map(|&a| RouteOrigin::As(a)),
        Some((crate::AS_SET, _)) => Some(RouteOrigin::None),
        // Confederation segments, an empty path, or an unknown kind (RFC
        // 6811 names only these four; a path with an unknown segment type
        // never reaches a RIB, treat it as the speaker's).
        _ => None,
    }
}

/// A prefix from an address and length, host bits cleared.
pub fn any_prefix(addr: IpAddr, len: u8) -> Option<AnyPrefix> {
    AnyPrefix::from_ip(addr, len, ipfib::prefix::HostBits::Mask).ok()
}
