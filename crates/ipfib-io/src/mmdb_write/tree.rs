//! The MMDB search tree from a longest-prefix-match table.
//!
//! An MMDB tree answers an address with the record where its walk leaves
//! the tree: its leaves are disjoint networks. An ipfib table nests
//! prefixes. [`Arena::build`] flattens one into the other in one recursive
//! pass over the routes sorted by (address, length): at each tree position
//! (a prefix), the route exactly there, if any, becomes the value inherited
//! below; with no route strictly inside, the position is a leaf holding the
//! inherited value (a record, or empty: a miss); otherwise the routes split
//! by the next bit (a binary search, as they are sorted) and the two halves
//! are built in turn. Two leaf halves merge into one leaf when they are the
//! same route's (or both misses), so a network a reader reports is always
//! inside the route that answers it; with `merge_routes`, two halves merge
//! whenever their records are equal (a smaller tree, whose networks may
//! span neighbouring routes with the same record). Work is one binary
//! search per node; nodes are at most the routes' lengths summed.
//!
//! A splice entry pins another tree's root at a prefix: the IPv4 tree at
//! `::/96` and its alias at `::ffff:0:0/96`. A pinned subtree never merges
//! into a leaf, so the official readers' walk of 96 zero bits to the IPv4
//! start always ends on a node at depth 96 (IPv4 prefix lengths come out
//! right, and their iteration does not mistake an equal leaf elsewhere for
//! the IPv4 start).

use ipfib::addr::Addr;

/// A record of a node: empty (no data: a miss), a data record (by record
/// id, an offset once the data section is written), or a node (by arena
/// index, renumbered when written).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rec {
    Empty,
    Data(u32),
    Node(u32),
}

/// What sits at a prefix of the sorted input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A route: its record id.
    Route(u32),
    /// Another tree's root, replacing everything at and below the prefix.
    Splice(Rec),
}

/// One input prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<A: Addr> {
    pub addr: A,
    pub len: u8,
    pub kind: Kind,
}

/// A built subtree: its record, whether a splice is below it, and for a
/// leaf the route that answers it (`None` for a miss).
#[derive(Clone, Copy)]
struct Built<A: Addr> {
    rec: Rec,
    pinned: bool,
    route: Option<(A, u8)>,
}

/// Most nodes a tree may have: record values (node numbers, the empty
/// record, data pointers past the 16-byte separator) must fit 32 bits.
pub const MAX_NODES: usize = (u32::MAX - 16) as usize;

/// The tree has more nodes than 32-bit records can number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooManyNodes;

/// Nodes in build order: children before their parent.
#[derive(Debug, Default)]
pub struct Arena {
    pub nodes: Vec<[Rec; 2]>,
    /// Merge equal leaves of different routes (smaller; a network may then
    /// span several routes with the same record).
    pub merge_routes: bool,
}

impl Arena {
    /// The record for the prefix `prefix`/`depth`, under which `entries`
    /// (sorted by address then length, all inside that prefix, at most
    /// one per prefix) are the routes; `inherited` answers where none of
    /// them does. Returns the record and whether it is pinned.
    pub fn build<A: Addr>(
        &mut self,
        entries: &[Entry<A>],
        depth: u8,
        prefix: A,
        inherited: Rec,
    ) -> Result<(Rec, bool), TooManyNodes> {
        self.build_from(entries, depth, prefix, (inherited, None))
            .map(|b| (b.rec, b.pinned))
    }

    fn build_from<A: Addr>(
        &mut self,
        entries: &[Entry<A>],
        depth: u8,
        prefix: A,
        inherited: (Rec, Option<(A, u8)>),
    ) -> Result<Built<A>, TooManyNodes> {
        let mut here = inherited;
        let mut rest = entries;
        if let Some((first, tail)) = entries.split_first() {
            if first.len == depth {
                match first.kind {
                    Kind::Splice(rec) => {
                        return Ok(Built {
                            rec,
                            pinned: true,
                            route: None,
                        })
                    }
                    Kind::Route(id) => here = (Rec::Data(id), Some((first.addr, first.len))),
                }
                rest = tail;
            }
        }
        let leaf = Built {
            rec: here.0,
            pinned: false,
            route: here.1,
        };
        if rest.is_empty() || depth >= A::BITS {
            return Ok(leaf);
        }
        // The right half starts one past the left half's last address
        // (never past the top: the left half is not the last of the space).
        let Some(mid) = prefix.last_of(depth + 1).checked_succ() else {
            return Ok(leaf);
        };
        let (left, right) = rest.split_at(rest.partition_point(|e| e.addr < mid));
        let l = self.build_from(left, depth + 1, prefix, here)?;
        let r = self.build_from(right, depth + 1, mid, here)?;
        let pinned = l.pinned || r.pinned;
        let same_leaf = l.rec == r.rec
            && !matches!(l.rec, Rec::Node(_))
            && (l.route == r.route || self.merge_routes);
        if !pinned && same_leaf {
            return Ok(l);
        }
        Ok(Built {
            rec: self.push([l.rec, r.rec])?,
            pinned,
            route: None,
        })
    }

    /// Add a node.
    pub fn push(&mut self, node: [Rec; 2]) -> Result<Rec, TooManyNodes> {
        if self.nodes.len() >= MAX_NODES {
            return Err(TooManyNodes);
        }
        self.nodes.push(node);
        Ok(Rec::Node((self.nodes.len() - 1) as u32))
    }

    fn children(&self, r: Rec) -> [Rec; 2] {
        match r {
            Rec::Node(i) => self.nodes.get(i as usize).copied().unwrap_or([r, r]),
            leaf => [leaf, leaf],
        }
    }
}

/// Whether every address that subtree `rb` of `b` answers (a non-empty
/// record) gets the same record from subtree `ra` of `a` (the two arenas
/// share record ids). A leaf stands for a subtree all of whose leaves are
/// that leaf.
pub fn keeps_answers(a: &Arena, ra: Rec, b: &Arena, rb: Rec) -> bool {
    match (ra, rb) {
        (_, Rec::Empty) => true,
        (Rec::Node(_), _) | (_, Rec::Node(_)) => {
            let [a0, a1] = a.children(ra);
            let [b0, b1] = b.children(rb);
            keeps_answers(a, a0, b, b0) && keeps_answers(a, a1, b, b1)
        }
        _ => ra == rb,
    }
}

/// The bytes of the search tree section: nodes numbered so that the root
/// (the last built) is node 0, each record `node_count` when empty, a node
/// number, or `node_count + 16 + offset` for data at `offset` of the data
/// section (`data_offset` maps a record id to its offset).
pub fn encode(
    arena: &Arena,
    record_size: u16,
    data_offset: &dyn Fn(u32) -> u64,
    out: &mut Vec<u8>,
) {
    let n = arena.nodes.len() as u64;
    let value = |r: Rec| -> u64 {
        match r {
            Rec::Empty => n,
            Rec::Node(i) => n - 1 - i as u64,
            Rec::Data(id) => n + 16 + data_offset(id),
        }
    };
    out.reserve(arena.nodes.len() * record_size as usize / 4);
    for [l, r] in arena.nodes.iter().rev() {
        let (l, r) = (value(*l), value(*r));
        match record_size {
            24 => {
                out.extend_from_slice(&low24(l));
                out.extend_from_slice(&low24(r));
            }
            28 => {
                // The high nibbles share the middle byte, the left one first
                // (spec, "28 bits (medium database)").
                out.extend_from_slice(&low24(l));
                out.push(((l >> 24) as u8 & 0x0f) << 4 | ((r >> 24) as u8 & 0x0f));
                out.extend_from_slice(&low24(r));
            }
            _ => {
                out.extend_from_slice(&(l as u32).to_be_bytes());
                out.extend_from_slice(&(r as u32).to_be_bytes());
            }
        }
    }
}

/// The low 24 bits, big-endian.
fn low24(v: u64) -> [u8; 3] {
    [(v >> 16) as u8, (v >> 8) as u8, v as u8]
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipfib::prefix::Prefix;

    fn entries(routes: &[(&str, u32)]) -> Vec<Entry<u32>> {
        let mut e: Vec<Entry<u32>> = routes
            .iter()
            .map(|(p, v)| {
                let p: Prefix<u32> = p.parse().unwrap();
                Entry {
                    addr: p.addr(),
                    len: p.len(),
                    kind: Kind::Route(*v),
                }
            })
            .collect();
        e.sort_by_key(|e| (e.addr, e.len));
        e
    }

    fn walk(a: &Arena, root: Rec, addr: u32) -> (Rec, u8) {
        let mut r = root;
        let mut depth = 0;
        while let Rec::Node(i) = r {
            r = a.nodes[i as usize][addr.bit(depth) as usize];
            depth += 1;
        }
        (r, depth)
    }

    #[test]
    fn nested_routes_flatten_to_disjoint_leaves() {
        let e = entries(&[("0.0.0.0/0", 1), ("128.0.0.0/2", 2), ("192.0.0.0/2", 2)]);
        let mut a = Arena::default();
        let (root, pin) = a.build(&e, 0, 0u32, Rec::Empty).unwrap();
        assert!(!pin);
        assert_eq!(a.nodes.len(), 2);
        assert_eq!(walk(&a, root, 0x0100_0000), (Rec::Data(1), 1));
        assert_eq!(walk(&a, root, 0xc000_0000), (Rec::Data(2), 2));
        // Merging by record: 128/2 and 192/2 become 128/1.
        let mut a = Arena {
            merge_routes: true,
            ..Arena::default()
        };
        let (root, _) = a.build(&e, 0, 0u32, Rec::Empty).unwrap();
        assert_eq!(a.nodes.len(), 1);
        assert_eq!(walk(&a, root, 0xc000_0000), (Rec::Data(2), 1));
    }

    #[test]
    fn a_route_equal_to_its_cover_merges_away_only_when_asked() {
        let e = entries(&[("10.0.0.0/8", 1), ("10.1.0.0/16", 1)]);
        let mut a = Arena::default();
        let (root, _) = a.build(&e, 0, 0u32, Rec::Empty).unwrap();
        assert_eq!(a.nodes.len(), 16);
        assert_eq!(walk(&a, root, 0x0a01_0203), (Rec::Data(1), 16));
        assert_eq!(walk(&a, root, 0x0a02_0203), (Rec::Data(1), 15));
        let mut a = Arena {
            merge_routes: true,
            ..Arena::default()
        };
        let (root, _) = a.build(&e, 0, 0u32, Rec::Empty).unwrap();
        assert_eq!(a.nodes.len(), 8);
        assert_eq!(walk(&a, root, 0x0a01_0203), (Rec::Data(1), 8));
        assert_eq!(walk(&a, root, 0x0b00_0000).0, Rec::Empty);
    }

    #[test]
    fn splices_are_pinned_and_answers_compared() {
        let mut a = Arena::default();
        let inner = a.push([Rec::Data(1), Rec::Data(1)]).unwrap();
        let e = vec![
            Entry {
                addr: 0u32,
                len: 0,
                kind: Kind::Route(1),
            },
            Entry {
                addr: 0,
                len: 3,
                kind: Kind::Splice(inner),
            },
        ];
        let (root, pin) = a.build(&e, 0, 0u32, Rec::Empty).unwrap();
        assert!(pin);
        // Three nodes down to the splice, plus the spliced node.
        assert_eq!(a.nodes.len(), 4);
        assert_eq!(walk(&a, root, 0x1000_0000), (Rec::Data(1), 4));
        let single = Arena::default();
        assert!(keeps_answers(&a, root, &single, Rec::Data(1)));
        assert!(!keeps_answers(&a, root, &single, Rec::Data(2)));
        assert!(keeps_answers(&a, root, &single, Rec::Empty));
        // A subtree answering less than the other: kept one way only.
        let mut b = Arena::default();
        let half = b.push([Rec::Data(1), Rec::Empty]).unwrap();
        assert!(keeps_answers(&a, root, &b, half));
        assert!(!keeps_answers(&b, half, &a, root));
    }

    #[test]
    fn records_of_28_bits_share_the_middle_byte() {
        let mut a = Arena::default();
        a.push([Rec::Data(0), Rec::Data(1)]).unwrap();
        let offsets = |id: u32| if id == 0 { 0x0abc_dee0 } else { 0x0123_4560 };
        let mut out = Vec::new();
        encode(&a, 28, &offsets, &mut out);
        // node_count 1: values 1 + 16 + offset.
        let (l, r) = (0x0abc_dee0u32 + 17, 0x0123_4560u32 + 17);
        assert_eq!(
            out,
            [
                (l >> 16) as u8,
                (l >> 8) as u8,
                l as u8,
                ((l >> 24) << 4 | r >> 24) as u8,
                (r >> 16) as u8,
                (r >> 8) as u8,
                r as u8
            ]
        );
        out.clear();
        encode(&a, 24, &|id| id as u64 * 5, &mut out);
        assert_eq!(out, [0, 0, 17, 0, 0, 22]);
        out.clear();
        encode(&a, 32, &|id| id as u64 * 5, &mut out);
        assert_eq!(out, [0, 0, 0, 17, 0, 0, 0, 22]);
    }
}
