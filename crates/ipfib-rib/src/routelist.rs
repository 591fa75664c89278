//! The routes of one prefix: an immutable list; a change makes a new
//! version (a copy of the array, or of one path of the tree).
//!
//! A prefix usually holds a few dozen routes (one per peer, path id and
//! RIB kind): a flat array in preference order, which a change copies
//! whole and a lookup reads front to back, is the fastest shape there.
//! Past [`FLAT_MAX`] routes (one prefix announced by thousands of peers,
//! most of them invented by a hostile sender) a whole copy per change
//! would make `n` announcements cost `n^2 / 2`; the list becomes a
//! persistent B-tree keyed by (peer, path id) instead, and a change
//! copies only the nodes on one root-to-leaf path: O(log n) entries,
//! every other node shared with the previous version, which readers may
//! still hold. Each node keeps its subtree's most preferred route, so
//! the prefix's best route stays known after any change in O(log n).
//!
//! Order of [`List::iter`]: preference order while flat, key order as a
//! tree; callers that need preference order sort.

use std::sync::Arc;

/// What the list holds: an item with a unique key (a route's peer and
/// path id).
pub trait Keyed: Clone {
    fn key(&self) -> u64;
}

/// The most routes a flat list holds; one more makes it a tree.
pub const FLAT_MAX: usize = 512;
/// A tree that falls below this many routes becomes flat again (half of
/// [`FLAT_MAX`]: a prefix near the limit does not convert at every change).
pub const FLAT_AGAIN: usize = FLAT_MAX / 2;

/// Most items per leaf and children per inner node.
const B: usize = 32;
/// Fewest items or children in a node other than the root: a node that
/// falls below merges with a neighbour.
const MIN: usize = B / 4;
/// Deepest tree: every node but the root has at least `MIN` (8) items or
/// children and the root at least 2, so a tree this deep would hold at
/// least 2 * 8^15 = 2^46 items, a petabyte of 16-byte routes.
const MAX_DEPTH: usize = 16;
/// Items per leaf (and children per node) of a tree built at once: room
/// to grow before a split, far from a merge.
const BUILD: usize = B * 3 / 4;

/// An item's preference key: the least is the most preferred. A key (not
/// a comparator) so that a sort computes each item's key once: what it
/// reads (a peer's RIB kind) may change while the sort runs, and a
/// comparator that changes its mind makes the standard sort panic.
pub type Prefer<'p, T, K> = &'p dyn Fn(&T) -> K;

/// The routes of one prefix (see the module docs).
#[derive(Clone, Debug)]
pub enum List<T> {
    /// In preference order, at most [`FLAT_MAX`].
    Flat(Box<[T]>),
    /// Keyed by [`Keyed::key`].
    Tree(Tree<T>),
}

impl<T> Default for List<T> {
    fn default() -> Self {
        List::Flat(Box::default())
    }
}

impl<T: Keyed> List<T> {
    /// A list of `items` in any order (keys unique).
    pub fn from_vec<K: Ord>(mut items: Vec<T>, prefer: Prefer<T, K>) -> List<T> {
        if items.len() <= FLAT_MAX {
            items.sort_by_cached_key(|x| prefer(x));
            List::Flat(items.into_boxed_slice())
        } else {
            items.sort_by_key(T::key);
            List::Tree(Tree::from_sorted(items, prefer))
        }
    }

    pub fn len(&self) -> usize {
        match self {
            List::Flat(v) => v.len(),
            List::Tree(t) => t.root.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most preferred item.
    pub fn best(&self) -> Option<&T> {
        match self {
            List::Flat(v) => v.first(),
            List::Tree(t) => Some(&t.root.best),
        }
    }

    /// The item with key `k`.
    pub fn get(&self, k: u64) -> Option<&T> {
        match self {
            List::Flat(v) => v.iter().find(|x| x.key() == k),
            List::Tree(t) => t.get(k),
        }
    }

    /// The most preferred item `fits` takes. Flat: the first that fits.
    /// Tree: a best-first search over the subtrees' summaries, skipping
    /// any subtree whose most preferred item is no better than the best
    /// fitting one found so far: O(log n) nodes when one of the first
    /// few preferred items fits, every item when none does.
    pub fn first_fitting<K: Ord>(
        &self,
        prefer: Prefer<T, K>,
        fits: &dyn Fn(&T) -> bool,
    ) -> Option<&T> {
        match self {
            List::Flat(v) => v.iter().find(|x| fits(x)),
            List::Tree(t) => {
                let mut found = None;
                search(&t.root, prefer, fits, &mut found);
                found.map(|(_, x)| x)
            }
        }
    }

    /// Every item: in preference order while flat, in key order as a tree.
    pub fn iter(&self) -> Iter<'_, T> {
        match self {
            List::Flat(v) => Iter::Flat(v.iter()),
            List::Tree(t) => Iter::Tree(t.iter()),
        }
    }

    /// The list with `item` added, or replacing the item with its key
    /// (returned).
    pub fn upsert<K: Ord>(&self, item: T, prefer: Prefer<T, K>) -> (List<T>, Option<T>) {
        match self {
            List::Flat(v) => {
                let k = item.key();
                let mut v = v.to_vec();
                let old = v.iter().position(|x| x.key() == k).map(|i| v.remove(i));
                if v.len() < FLAT_MAX {
                    let k = prefer(&item);
                    let at = v.partition_point(|x| prefer(x) < k);
                    v.insert(at, item);
                    (List::Flat(v.into_boxed_slice()), old)
                } else {
                    v.push(item);
                    (List::from_vec(v, prefer), old)
                }
            }
            List::Tree(t) => {
                let (t, old) = t.upsert(item, prefer);
                (List::Tree(t), old)
            }
        }
    }

    /// The list without the item with key `k` (returned); `None` when
    /// there is none.
    pub fn remove<K: Ord>(&self, k: u64, prefer: Prefer<T, K>) -> Option<(List<T>, T)> {
        match self {
            List::Flat(v) => {
                let i = v.iter().position(|x| x.key() == k)?;
                let mut v = v.to_vec();
                let gone = v.remove(i);
                Some((List::Flat(v.into_boxed_slice()), gone))
            }
            List::Tree(t) => {
                let (t, gone) = t.remove(k, prefer)?;
                let list = match t {
                    Some(t) if t.root.len >= FLAT_AGAIN => List::Tree(t),
                    Some(t) => List::from_vec(t.iter().cloned().collect(), prefer),
                    None => List::default(),
                };
                Some((list, gone))
            }
        }
    }

    /// The items `keep` keeps (a rebuild: O(n)).
    pub fn retain<K: Ord>(&self, keep: impl Fn(&T) -> bool, prefer: Prefer<T, K>) -> List<T> {
        let kept: Vec<T> = self.iter().filter(|x| keep(x)).cloned().collect();
        match self {
            // Still in preference order.
            List::Flat(_) => List::Flat(kept.into_boxed_slice()),
            List::Tree(_) if kept.len() > FLAT_MAX => List::Tree(Tree::from_sorted(kept, prefer)),
            List::Tree(_) => List::from_vec(kept, prefer),
        }
    }
}

/// An iterator over a [`List`]. The tree variant carries its path on the
/// stack (a few hundred bytes) so that iterating never allocates.
#[allow(clippy::large_enum_variant)]
pub enum Iter<'a, T> {
    Flat(std::slice::Iter<'a, T>),
    Tree(TreeIter<'a, T>),
}

impl<'a, T> Iterator for Iter<'a, T> {
    type Item = &'a T;

    #[inline]
    fn next(&mut self) -> Option<&'a T> {
        match self {
            Iter::Flat(i) => i.next(),
            Iter::Tree(i) => i.next(),
        }
    }
}

/// A persistent B-tree (a non-empty one: an empty list is flat). The
/// root's summary is boxed so that a [`List`] stays three words: every
/// prefix of a full table holds one.
#[derive(Clone, Debug)]
pub struct Tree<T> {
    root: Box<Child<T>>,
}

#[derive(Clone, Debug)]
enum Node<T> {
    /// Items in key order.
    Leaf(Arc<[T]>),
    /// Children in key order.
    Inner(Arc<[Child<T>]>),
}

/// A node with its subtree's summary.
#[derive(Clone, Debug)]
struct Child<T> {
    node: Node<T>,
    /// The subtree's largest key.
    last: u64,
    /// Items in the subtree.
    len: usize,
    /// The subtree's most preferred item.
    best: T,
}

impl<T> Node<T> {
    fn width(&self) -> usize {
        match self {
            Node::Leaf(v) => v.len(),
            Node::Inner(v) => v.len(),
        }
    }
}

fn leaf<T: Keyed, K: Ord>(items: Vec<T>, prefer: Prefer<T, K>) -> Child<T> {
    let best = most_preferred(items.iter(), prefer);
    Child {
        last: items.last().expect("leaves are not empty").key(),
        len: items.len(),
        best,
        node: Node::Leaf(items.into()),
    }
}

fn inner<T: Keyed, K: Ord>(children: Vec<Child<T>>, prefer: Prefer<T, K>) -> Child<T> {
    let best = most_preferred(children.iter().map(|c| &c.best), prefer);
    Child {
        last: children.last().expect("inner nodes are not empty").last,
        len: children.iter().map(|c| c.len).sum(),
        best,
        node: Node::Inner(children.into()),
    }
}

fn most_preferred<'a, T: Clone + 'a, K: Ord>(
    mut items: impl Iterator<Item = &'a T>,
    prefer: Prefer<T, K>,
) -> T {
    let first = items.next().expect("nodes are not empty");
    let mut best = (prefer(first), first);
    for x in items {
        let k = prefer(x);
        if k < best.0 {
            best = (k, x);
        }
    }
    best.1.clone()
}

/// `v` in one node, or two halves when it holds more than `B`.
fn fit<X>(mut v: Vec<X>) -> (Vec<X>, Option<Vec<X>>) {
    if v.len() <= B {
        return (v, None);
    }
    let upper = v.split_off(v.len() / 2);
    (v, Some(upper))
}

/// `v` in nodes of about `BUILD` each (at least `MIN` when `v` holds that
/// many).
fn chunks<X>(v: Vec<X>) -> Vec<Vec<X>> {
    let m = v.len().div_ceil(BUILD).max(1);
    let (q, r) = (v.len() / m, v.len() % m);
    let mut out = Vec::with_capacity(m);
    let mut it = v.into_iter();
    for i in 0..m {
        out.push(it.by_ref().take(q + usize::from(i < r)).collect());
    }
    out
}

impl<T: Keyed> Tree<T> {
    /// A tree of `items` (non-empty, in strictly increasing key order).
    fn from_sorted<K: Ord>(items: Vec<T>, prefer: Prefer<T, K>) -> Tree<T> {
        let mut level: Vec<Child<T>> = chunks(items).into_iter().map(|c| leaf(c, prefer)).collect();
        while level.len() > 1 {
            level = chunks(level)
                .into_iter()
                .map(|c| inner(c, prefer))
                .collect();
        }
        Tree {
            root: Box::new(level.pop().expect("from_sorted takes items")),
        }
    }

    fn get(&self, k: u64) -> Option<&T> {
        let mut c: &Child<T> = &self.root;
        loop {
            match &c.node {
                Node::Leaf(v) => {
                    return v.binary_search_by_key(&k, T::key).ok().map(|i| &v[i]);
                }
                Node::Inner(v) => {
                    c = v.get(v.partition_point(|c| c.last < k))?;
                }
            }
        }
    }

    fn upsert<K: Ord>(&self, item: T, prefer: Prefer<T, K>) -> (Tree<T>, Option<T>) {
        let (a, b, old) = upsert(&self.root, item, prefer);
        let root = match b {
            Some(b) => inner(vec![a, b], prefer),
            None => a,
        };
        (
            Tree {
                root: Box::new(root),
            },
            old,
        )
    }

    /// `None` when `k` is absent; `Some((None, _))` when the tree emptied.
    fn remove<K: Ord>(&self, k: u64, prefer: Prefer<T, K>) -> Option<(Option<Tree<T>>, T)> {
        let (mut root, gone) = remove(&self.root, k, prefer)?;
        // A root with one child gives way to it.
        while let Some(Child {
            node: Node::Inner(v),
            ..
        }) = &root
        {
            if v.len() != 1 {
                break;
            }
            root = Some(v[0].clone());
        }
        Some((
            root.map(|root| Tree {
                root: Box::new(root),
            }),
            gone,
        ))
    }

    fn iter(&self) -> TreeIter<'_, T> {
        let mut stack = [(&[][..], 0); MAX_DEPTH];
        stack[0] = (std::slice::from_ref(&*self.root), 0);
        TreeIter {
            stack,
            depth: 1,
            leaf: [].iter(),
        }
    }
}

/// `c` with `item` in it: one node, or two after a split; the item
/// replaced.
fn upsert<T: Keyed, K: Ord>(
    c: &Child<T>,
    item: T,
    prefer: Prefer<T, K>,
) -> (Child<T>, Option<Child<T>>, Option<T>) {
    let k = item.key();
    match &c.node {
        Node::Leaf(v) => {
            let mut v = v.to_vec();
            let old = match v.binary_search_by_key(&k, T::key) {
                Ok(i) => Some(std::mem::replace(&mut v[i], item)),
                Err(i) => {
                    v.insert(i, item);
                    None
                }
            };
            let (a, b) = fit(v);
            (leaf(a, prefer), b.map(|b| leaf(b, prefer)), old)
        }
        Node::Inner(v) => {
            // The first child whose keys reach `k`, else the last.
            let i = v.partition_point(|c| c.last < k).min(v.len() - 1);
            let (x, y, old) = upsert(&v[i], item, prefer);
            let mut v = v.to_vec();
            v[i] = x;
            if let Some(y) = y {
                v.insert(i + 1, y);
            }
            let (a, b) = fit(v);
            (inner(a, prefer), b.map(|b| inner(b, prefer)), old)
        }
    }
}

/// `c` without the item with key `k`: `None` when absent; the node left
/// (`None` if it emptied) and the item.
fn remove<T: Keyed, K: Ord>(
    c: &Child<T>,
    k: u64,
    prefer: Prefer<T, K>,
) -> Option<(Option<Child<T>>, T)> {
    match &c.node {
        Node::Leaf(v) => {
            let i = v.binary_search_by_key(&k, T::key).ok()?;
            let mut v = v.to_vec();
            let gone = v.remove(i);
            Some(((!v.is_empty()).then(|| leaf(v, prefer)), gone))
        }
        Node::Inner(v) => {
            let i = v.partition_point(|c| c.last < k);
            let (x, gone) = remove(v.get(i)?, k, prefer)?;
            let mut v = v.to_vec();
            match x {
                None => {
                    v.remove(i);
                }
                Some(x) if x.node.width() < MIN && v.len() > 1 => {
                    // Merge with a neighbour (split again if too wide).
                    v[i] = x;
                    let lo = if i + 1 < v.len() { i } else { i - 1 };
                    let right = v.remove(lo + 1);
                    let merged = merge(&v[lo], &right, prefer);
                    v.splice(lo..=lo, merged);
                }
                Some(x) => v[i] = x,
            }
            Some(((!v.is_empty()).then(|| inner(v, prefer)), gone))
        }
    }
}

/// See [`List::first_fitting`]: `found` is the best fitting item so far.
fn search<'a, T: Keyed, K: Ord>(
    c: &'a Child<T>,
    prefer: Prefer<T, K>,
    fits: &dyn Fn(&T) -> bool,
    found: &mut Option<(K, &'a T)>,
) {
    let beaten = |k: &K, found: &Option<(K, &'a T)>| found.as_ref().is_some_and(|(f, _)| f <= k);
    match &c.node {
        Node::Leaf(v) => {
            for x in v.iter() {
                if fits(x) {
                    let k = prefer(x);
                    if !beaten(&k, found) {
                        *found = Some((k, x));
                    }
                }
            }
        }
        Node::Inner(v) => {
            // The child holding the subtree's best first (the likeliest to
            // hold a fitting item early), then the others that could still
            // beat what was found. No allocation: lookups run this.
            let first = (0..v.len())
                .min_by_key(|&i| prefer(&v[i].best))
                .expect("inner nodes are not empty");
            search(&v[first], prefer, fits, found);
            for (i, c) in v.iter().enumerate() {
                if i != first && !beaten(&prefer(&c.best), found) {
                    search(c, prefer, fits, found);
                }
            }
        }
    }
}

/// Two neighbouring nodes of one level as one, or two when too wide.
fn merge<T: Keyed, K: Ord>(a: &Child<T>, b: &Child<T>, prefer: Prefer<T, K>) -> Vec<Child<T>> {
    match (&a.node, &b.node) {
        (Node::Leaf(x), Node::Leaf(y)) => {
            let (p, q) = fit([&x[..], &y[..]].concat());
            std::iter::once(p)
                .chain(q)
                .map(|v| leaf(v, prefer))
                .collect()
        }
        (Node::Inner(x), Node::Inner(y)) => {
            let (p, q) = fit([&x[..], &y[..]].concat());
            std::iter::once(p)
                .chain(q)
                .map(|v| inner(v, prefer))
                .collect()
        }
        _ => unreachable!("every leaf of a B-tree is at one depth"),
    }
}

/// Items of a [`Tree`] in key order (no allocation: the path is on the
/// stack).
pub struct TreeIter<'a, T> {
    stack: [(&'a [Child<T>], usize); MAX_DEPTH],
    depth: usize,
    leaf: std::slice::Iter<'a, T>,
}

impl<'a, T> Iterator for TreeIter<'a, T> {
    type Item = &'a T;

    fn next(&mut self) -> Option<&'a T> {
        loop {
            if let Some(x) = self.leaf.next() {
                return Some(x);
            }
            loop {
                let (children, i) = self.stack.get_mut(self.depth.checked_sub(1)?)?;
                let Some(c) = children.get(*i) else {
                    self.depth -= 1;
                    continue;
                };
                *i += 1;
                match &c.node {
                    Node::Leaf(v) => {
                        self.leaf = v.iter();
                        break;
                    }
                    Node::Inner(v) => {
                        // See MAX_DEPTH: a deeper tree cannot exist.
                        assert!(self.depth < MAX_DEPTH, "route tree deeper than {MAX_DEPTH}");
                        self.stack[self.depth] = (&v[..], 0);
                        self.depth += 1;
                    }
                }
            }
        }
    }
}

impl<T: Keyed + std::fmt::Debug> List<T> {
    /// Panics unless the list's invariants hold: flat lists in preference
    /// order within their bound; trees with strictly increasing keys,
    /// exact summaries, every leaf at one depth, nodes within their
    /// widths. Preference is checked among the items `stable` accepts
    /// only (a route whose peer was freed since ranks otherwise than when
    /// it was placed; the RIB never places one).
    pub fn validate<K: Ord>(&self, prefer: Prefer<T, K>, stable: &dyn Fn(&T) -> bool) {
        match self {
            List::Flat(v) => {
                assert!(v.len() <= FLAT_MAX);
                let kept: Vec<&T> = v.iter().filter(|x| stable(x)).collect();
                for w in kept.windows(2) {
                    assert!(prefer(w[0]) < prefer(w[1]), "flat list out of order");
                }
            }
            List::Tree(t) => {
                assert!(t.root.len >= FLAT_AGAIN, "tree of {} items", t.root.len);
                let mut leaf_depth = None;
                let mut prev = None;
                check(&t.root, true, 0, &mut leaf_depth, &mut prev, prefer, stable);
            }
        }
    }
}

fn check<T: Keyed + std::fmt::Debug, K: Ord>(
    c: &Child<T>,
    root: bool,
    depth: usize,
    leaf_depth: &mut Option<usize>,
    prev: &mut Option<u64>,
    prefer: Prefer<T, K>,
    stable: &dyn Fn(&T) -> bool,
) -> bool {
    let w = c.node.width();
    assert!((1..=B).contains(&w), "node width {w}");
    assert!(root || w >= MIN, "non-root node of width {w}");
    assert!(depth < MAX_DEPTH);
    // Whether every item of the subtree is `stable` (its best checkable).
    let (len, best, last, all_stable) = match &c.node {
        Node::Leaf(v) => {
            assert_eq!(
                *leaf_depth.get_or_insert(depth),
                depth,
                "leaves at two depths"
            );
            for x in v.iter() {
                assert!(prev.is_none_or(|p| p < x.key()), "keys out of order");
                *prev = Some(x.key());
            }
            let best = most_preferred(v.iter(), prefer);
            let all_stable = v.iter().all(stable);
            (v.len(), best, v.last().unwrap().key(), all_stable)
        }
        Node::Inner(v) => {
            let mut all_stable = true;
            for x in v.iter() {
                all_stable &= check(x, false, depth + 1, leaf_depth, prev, prefer, stable);
            }
            let best = most_preferred(v.iter().map(|x| &x.best), prefer);
            (
                v.iter().map(|x| x.len).sum(),
                best,
                v.last().unwrap().last,
                all_stable,
            )
        }
    };
    assert_eq!(c.len, len, "subtree length");
    assert_eq!(c.last, last, "subtree last key");
    if all_stable {
        assert_eq!(c.best.key(), best.key(), "subtree best");
    }
    all_stable
}

// The integration tests' generator (one copy of it).
#[cfg(test)]
#[path = "../tests/common/rng.rs"]
mod test_rng;

#[cfg(test)]
mod tests {
    use super::test_rng::Rng;
    use super::*;
    use std::collections::BTreeMap;

    /// A route stand-in: key and a preference rank.
    #[derive(Clone, Debug, PartialEq)]
    struct It {
        key: u64,
        rank: u32,
    }

    impl Keyed for It {
        fn key(&self) -> u64 {
            self.key
        }
    }

    fn prefer(x: &It) -> (u32, u64) {
        (x.rank, x.key)
    }

    /// Every observable of `list` against a map from key to rank.
    fn agree(list: &List<It>, oracle: &BTreeMap<u64, u32>) {
        list.validate(&prefer, &|_| true);
        assert_eq!(list.len(), oracle.len());
        let mut want: Vec<It> = oracle
            .iter()
            .map(|(&key, &rank)| It { key, rank })
            .collect();
        want.sort_by_key(prefer);
        let mut got: Vec<It> = list.iter().cloned().collect();
        if let List::Tree(_) = list {
            got.sort_by_key(prefer);
        }
        assert_eq!(got, want);
        assert_eq!(list.best(), want.first());
        for m in [2u64, 3, 7, 1_000_003] {
            let fits = |x: &It| x.key % m == 1;
            assert_eq!(
                list.first_fitting(&prefer, &fits),
                want.iter().find(|x| fits(x)),
                "mod {m}"
            );
        }
        let mut keys: Vec<u64> = list.iter().map(|x| x.key).collect();
        keys.sort_unstable();
        assert!(keys.iter().copied().eq(oracle.keys().copied()));
    }

    /// Random upserts, replacements and removals across the flat and tree
    /// shapes and back, each version checked against a map; old versions
    /// stay intact (persistence).
    #[test]
    fn agrees_with_a_map_through_growth_and_shrinking() {
        for seed in 1..=6u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let mut list = List::default();
            let mut oracle = BTreeMap::new();
            // Keys from a range that makes replacements and misses common;
            // ranks few, so ties fall to the key.
            let space = [600u64, 3_000, 40_000][seed as usize % 3];
            let mut target = 0usize;
            for step in 0..12_000 {
                if step % 3_000 == 0 {
                    // Grow well past FLAT_MAX, then shrink below FLAT_AGAIN.
                    target = [2_000, 100, 1_500, 0][(step / 3_000) % 4];
                }
                let k = rng.below(space);
                let grow = oracle.len() < target || rng.below(4) == 0;
                let old = list.clone();
                let old_oracle = oracle.clone();
                if grow {
                    let rank = rng.below(8) as u32;
                    let (next, replaced) = list.upsert(It { key: k, rank }, &prefer);
                    let want = oracle.insert(k, rank);
                    assert_eq!(replaced.map(|x| x.rank), want);
                    list = next;
                } else {
                    match (list.remove(k, &prefer), oracle.remove(&k)) {
                        (Some((next, gone)), Some(rank)) => {
                            assert_eq!(gone, It { key: k, rank });
                            list = next;
                        }
                        (None, None) => {}
                        (got, want) => panic!("remove {k}: {:?} vs {want:?}", got.map(|g| g.1)),
                    }
                }
                assert_eq!(list.get(k).map(|x| x.rank), oracle.get(&k).copied());
                if step % 97 == 0 {
                    agree(&list, &oracle);
                    agree(&old, &old_oracle);
                }
            }
            agree(&list, &oracle);
        }
    }

    #[test]
    fn retain_and_from_vec_pick_the_shape_by_size() {
        let items: Vec<It> = (0..2_000u64)
            .map(|k| It {
                key: k * 7,
                rank: (k % 5) as u32,
            })
            .collect();
        let list = List::from_vec(items.clone(), &prefer);
        assert!(matches!(list, List::Tree(_)));
        let oracle: BTreeMap<u64, u32> = items.iter().map(|x| (x.key, x.rank)).collect();
        agree(&list, &oracle);
        for keep_below in [1_500u64, 600, 0] {
            let kept = list.retain(|x| x.key < keep_below * 7, &prefer);
            let want: BTreeMap<u64, u32> = oracle
                .iter()
                .filter(|(k, _)| **k < keep_below * 7)
                .map(|(k, r)| (*k, *r))
                .collect();
            agree(&kept, &want);
            assert_eq!(matches!(kept, List::Tree(_)), want.len() > FLAT_MAX);
        }
    }

    /// A key that changes between calls (a peer freed while a reader
    /// sorts its copy) never makes a sort or a conversion panic: each
    /// item's key is taken once per sort. (With a comparator, the standard
    /// sort panics on such an order: seen under hostile churn.)
    #[test]
    fn a_changing_key_never_panics() {
        let calls = std::cell::Cell::new(0u64);
        let chaotic = |x: &It| {
            calls.set(
                calls
                    .get()
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(x.key | 1),
            );
            calls.get() >> 40
        };
        for n in [40u64, 300, 2_000, 20_000] {
            let items: Vec<It> = (0..n).map(|k| It { key: k, rank: 0 }).collect();
            let list = List::from_vec(items, &chaotic);
            assert_eq!(list.len() as u64, n);
            let list = list.retain(|x| x.key % 3 != 0, &chaotic);
            let (list, _) = list.upsert(
                It {
                    key: n + 1,
                    rank: 1,
                },
                &chaotic,
            );
            let mut list = list;
            for k in 0..n {
                if let Some((next, _)) = list.remove(k, &chaotic) {
                    list = next;
                }
            }
            assert_eq!(list.len(), 1);
        }
    }

    /// One change to a big tree copies one path, not the list: the nodes
    /// off the path are the old version's.
    #[test]
    fn a_change_shares_every_node_off_its_path() {
        let items: Vec<It> = (0..65_536u64).map(|k| It { key: k, rank: 0 }).collect();
        let List::Tree(t) = List::from_vec(items, &prefer) else {
            panic!("a tree");
        };
        let (u, _) = t.upsert(
            It {
                key: 70_000,
                rank: 1,
            },
            &prefer,
        );
        let (Node::Inner(a), Node::Inner(b)) = (&t.root.node, &u.root.node) else {
            panic!("inner roots");
        };
        let shared = a
            .iter()
            .zip(b.iter())
            .filter(|(x, y)| match (&x.node, &y.node) {
                (Node::Inner(p), Node::Inner(q)) => Arc::ptr_eq(p, q),
                _ => false,
            })
            .count();
        // Every child of the root but the last (where key 70,000 went).
        assert_eq!(shared, a.len() - 1);
    }
}
