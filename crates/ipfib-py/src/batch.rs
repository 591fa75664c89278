//! `lookup_many` without the GIL: addresses of either family are split by
//! family (IPv4-mapped IPv6 addresses go to IPv4, as everywhere in ipfib),
//! looked up through each engine's batch path, and the answers written
//! where they belong by a [`Sink`]: integer values, or value slots that
//! the caller turns into Python objects afterwards.
//!
//! Every position of the input gets exactly one answer (items that are
//! null or bad under `errors="coerce"` get a miss), so the outputs need no
//! prefill: they are allocated zeroed (fresh pages from the kernel, not
//! written twice) and each element is written once, in input order within
//! a family.

use crate::snapshot::{Sink, Snapshot};
use ipfib::engine::NO_ROUTE;
use ipfib::prefix::AnyAddr;

/// Items decoded per round for inputs that need decoding (IPv6 arrays,
/// Arrow strings): bounds the memory beside the output arrays.
pub const DECODE_CHUNK: usize = 1 << 16;

/// An item that is not an address: its index and text.
#[derive(Debug)]
pub struct BadItem {
    pub index: usize,
    pub text: String,
}

/// Why a `lookup_many` stopped.
#[derive(Debug)]
pub enum ManyError {
    /// An item that is not an address (with `errors="raise"`).
    Bad(BadItem),
    /// The route-ordinal engine could not be built.
    Build(String),
}

impl From<BadItem> for ManyError {
    fn from(e: BadItem) -> Self {
        ManyError::Bad(e)
    }
}

impl From<String> for ManyError {
    fn from(e: String) -> Self {
        ManyError::Build(e)
    }
}

/// Whether bad items raise (the first one stops the call) or miss.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    Raise,
    Coerce,
}

impl OnError {
    /// The `errors=` argument of the `lookup_many` methods.
    pub fn parse(errors: &str) -> pyo3::PyResult<OnError> {
        match errors {
            "raise" => Ok(OnError::Raise),
            "coerce" => Ok(OnError::Coerce),
            _ => Err(pyo3::exceptions::PyValueError::new_err(format!(
                "errors must be 'raise' or 'coerce', not {errors:?}"
            ))),
        }
    }
}

/// Addresses split by family, with the position each came from, and the
/// positions that hold no address (nulls, coerced bad items).
#[derive(Default)]
pub struct Mixed {
    v4: Vec<u32>,
    pos4: Vec<u32>,
    v6: Vec<u128>,
    pos6: Vec<u32>,
    none: Vec<u32>,
}

impl Mixed {
    pub fn clear(&mut self) {
        self.v4.clear();
        self.pos4.clear();
        self.v6.clear();
        self.pos6.clear();
        self.none.clear();
    }

    /// Position `pos` holds no address: it answers a miss.
    #[inline]
    pub fn push_none(&mut self, pos: usize) {
        self.none.push(pos as u32);
    }

    /// Add the address at `pos` (callers keep `pos` below 2^32).
    #[inline]
    pub fn push(&mut self, pos: usize, a: AnyAddr) {
        match a {
            AnyAddr::V4(a) => {
                self.v4.push(a);
                self.pos4.push(pos as u32);
            }
            AnyAddr::V6(a) => {
                self.v6.push(a);
                self.pos6.push(pos as u32);
            }
        }
    }

    /// Add an IPv6 address as a number, unmapping `::ffff:a.b.c.d`.
    #[inline]
    pub fn push_v6(&mut self, pos: usize, a: u128) {
        if a >> 32 == 0xffff {
            self.push(pos, AnyAddr::V4(a as u32));
        } else {
            self.push(pos, AnyAddr::V6(a));
        }
    }

    /// The IPv4 addresses and the position each came from.
    pub fn v4(&self) -> (&[u32], &[u32]) {
        (&self.v4, &self.pos4)
    }

    /// The IPv6 addresses and the position each came from.
    pub fn v6(&self) -> (&[u128], &[u32]) {
        (&self.v6, &self.pos6)
    }

    /// The positions that hold no address.
    pub fn nones(&self) -> &[u32] {
        &self.none
    }

    /// How many positions it answers.
    pub fn positions(&self) -> usize {
        self.v4.len() + self.v6.len() + self.none.len()
    }

    /// Look every address up and hand the answers to `sink`.
    pub fn answer<S: FamilySink>(
        &self,
        snap: &Snapshot,
        with_len: bool,
        sink: &mut S,
    ) -> Result<(), String> {
        for &p in &self.none {
            sink.put(p as usize, NO_ROUTE, 0);
        }
        sink.family(4);
        snap.v4.answer(&self.v4, Some(&self.pos4), with_len, sink)?;
        sink.family(6);
        snap.v6.answer(&self.v6, Some(&self.pos6), with_len, sink)
    }
}

/// A [`Sink`] told which family's answers come next.
pub trait FamilySink: Sink {
    fn family(&mut self, family: u8);
}

/// A sink that can be cut at a position, so that each lookup thread
/// answers a contiguous share of the input into its own part: outputs
/// written in place are split (disjoint slices); totals are kept per part
/// and taken back with [`SplitSink::absorb`].
pub trait SplitSink: FamilySink + Send + Sized {
    /// Keep positions `..at` here; return a sink of positions `at..`,
    /// numbered from 0 in the returned sink.
    fn split_off(&mut self, at: usize) -> Self;

    /// Take back what a part holds that is not written in place.
    fn absorb(&mut self, part: Self) {
        let _ = part;
    }
}

/// Cut `s` at `at`: `s` keeps the head, the tail is returned.
fn cut<'a, T>(s: &mut &'a mut [T], at: usize) -> &'a mut [T] {
    let (head, tail) = std::mem::take(s).split_at_mut(at);
    *s = head;
    tail
}

/// Look up IPv4 addresses given as numbers (no decoding, no split).
pub fn answer_v4<S: FamilySink>(
    snap: &Snapshot,
    addrs: &[u32],
    with_len: bool,
    sink: &mut S,
) -> Result<(), String> {
    sink.family(4);
    snap.v4.answer(addrs, None, with_len, sink)
}

/// The addresses of a `lookup_many` input as plain slices (no Python
/// objects: what the GIL-free part reads).
pub enum Items<'a> {
    /// IPv4 as numbers.
    V4(&'a [u32]),
    /// IPv6, 16 bytes per row, network order.
    V6Bytes(&'a [u8]),
    /// IPv6, two words per row: bits 127..64, bits 63..0.
    V6Words(&'a [u64]),
    /// Already split by family (a Python list, parsed with the GIL).
    Parsed(&'a Mixed),
    /// Arrow-style variable-length items: `offsets` (n + 1), bytes, nulls.
    Buffers {
        packed: bool,
        offsets: &'a [i64],
        data: &'a [u8],
        nulls: Option<&'a [bool]>,
    },
}

impl<'a> Items<'a> {
    /// How many items (positions) there are.
    pub fn len(&self) -> usize {
        match *self {
            Items::V4(raw) => raw.len(),
            Items::V6Bytes(raw) => raw.len() / 16,
            Items::V6Words(raw) => raw.len() / 2,
            Items::Parsed(mixed) => mixed.positions(),
            Items::Buffers { offsets, .. } => offsets.len().saturating_sub(1),
        }
    }

    /// Items `start..end` (within [`Items::len`]), numbered from 0; `None`
    /// for a parsed list, whose positions are not contiguous by family.
    pub fn slice(&self, start: usize, end: usize) -> Option<Items<'a>> {
        Some(match *self {
            Items::V4(raw) => Items::V4(&raw[start..end]),
            Items::V6Bytes(raw) => Items::V6Bytes(&raw[16 * start..16 * end]),
            Items::V6Words(raw) => Items::V6Words(&raw[2 * start..2 * end]),
            Items::Parsed(_) => return None,
            Items::Buffers {
                packed,
                offsets,
                data,
                nulls,
            } => Items::Buffers {
                packed,
                // Offsets stay absolute into `data`.
                offsets: &offsets[start..=end],
                data,
                nulls: nulls.map(|v| &v[start.min(v.len())..end.min(v.len())]),
            },
        })
    }

    /// Decode every item, in rounds of [`DECODE_CHUNK`], into a [`Mixed`]
    /// handed to `f` (an already parsed input: all at once). A bad item
    /// stops the call or, with `OnError::Coerce`, holds no address.
    pub fn each_chunk<E, F>(&self, on_error: OnError, f: F) -> Result<(), E>
    where
        E: From<BadItem>,
        F: FnMut(&Mixed) -> Result<(), E>,
    {
        match *self {
            Items::V4(raw) => decode_chunks(raw.len(), on_error, f, |i, m| {
                m.push(i, AnyAddr::V4(raw[i]));
                Ok(())
            }),
            Items::V6Bytes(raw) => decode_chunks(raw.len() / 16, on_error, f, |i, m| {
                decode_packed(i, &raw[i * 16..i * 16 + 16], m)
            }),
            Items::V6Words(raw) => decode_chunks(raw.len() / 2, on_error, f, |i, m| {
                m.push_v6(i, (raw[2 * i] as u128) << 64 | raw[2 * i + 1] as u128);
                Ok(())
            }),
            Items::Parsed(mixed) => {
                let mut f = f;
                f(mixed)
            }
            Items::Buffers {
                packed,
                offsets,
                data,
                nulls,
            } => {
                let n = offsets.len().saturating_sub(1);
                decode_chunks(n, on_error, f, |i, m| {
                    if nulls.is_some_and(|n| n.get(i).copied().unwrap_or(false)) {
                        m.push_none(i);
                        return Ok(());
                    }
                    let (s, e) = (offsets[i], offsets[i + 1]);
                    let bytes = usize::try_from(s)
                        .ok()
                        .zip(usize::try_from(e).ok())
                        .and_then(|(s, e)| data.get(s..e))
                        // Lazily: the message is built only for a bad item.
                        .ok_or_else(|| BadItem {
                            index: i,
                            text: format!("offsets {s}..{e} outside the data"),
                        })?;
                    if packed {
                        decode_packed(i, bytes, m)
                    } else {
                        decode_text(i, bytes, m)
                    }
                })
            }
        }
    }
}

/// Decode items `0..n` in rounds of [`DECODE_CHUNK`] with `decode(i)`
/// (which pushes item `i` into the `Mixed`, `push_none` for a null) and
/// hand each round to `f`; a bad item stops the call or, with
/// `OnError::Coerce`, holds no address.
fn decode_chunks<E, F, D>(n: usize, on_error: OnError, mut f: F, mut decode: D) -> Result<(), E>
where
    E: From<BadItem>,
    F: FnMut(&Mixed) -> Result<(), E>,
    D: FnMut(usize, &mut Mixed) -> Result<(), BadItem>,
{
    let mut mixed = Mixed::default();
    let mut start = 0;
    while start < n {
        let end = n.min(start + DECODE_CHUNK);
        mixed.clear();
        for i in start..end {
            match decode(i, &mut mixed) {
                Ok(()) => {}
                Err(bad) if on_error == OnError::Raise => return Err(bad.into()),
                Err(_) => mixed.push_none(i),
            }
        }
        f(&mixed)?;
        start = end;
    }
    Ok(())
}

/// Parse text as an address of either family (surrounding whitespace
/// ignored) into `mixed`.
#[inline]
pub fn decode_text(index: usize, bytes: &[u8], mixed: &mut Mixed) -> Result<(), BadItem> {
    // The byte parser (no UTF-8 check, no allocation) answers the usual
    // item; `AnyAddr::parse` (same grammar, whitespace trimmed) the rest.
    let parsed = AnyAddr::parse_ascii(bytes).or_else(|| {
        std::str::from_utf8(bytes)
            .ok()
            .and_then(|t| AnyAddr::parse(t).ok())
    });
    match parsed {
        Some(a) => {
            mixed.push(index, a);
            Ok(())
        }
        None => Err(BadItem {
            index,
            text: String::from_utf8_lossy(bytes).chars().take(80).collect(),
        }),
    }
}

/// A packed address: 4 bytes IPv4 or 16 bytes IPv6, network order.
#[inline]
pub fn decode_packed(index: usize, bytes: &[u8], mixed: &mut Mixed) -> Result<(), BadItem> {
    if let Ok(b) = <[u8; 4]>::try_from(bytes) {
        mixed.push(index, AnyAddr::V4(u32::from_be_bytes(b)));
        Ok(())
    } else if let Ok(b) = <[u8; 16]>::try_from(bytes) {
        mixed.push_v6(index, u128::from_be_bytes(b));
        Ok(())
    } else {
        Err(BadItem {
            index,
            text: format!("{} bytes (expected 4 or 16)", bytes.len()),
        })
    }
}

/// An integer type `lookup_many` can answer in (its `dtype=`).
pub trait OutInt: numpy::Element + Copy + Send {
    /// Whether `v` is representable.
    fn fits(v: i64) -> bool;
    /// `v` as this type; callers check [`OutInt::fits`] first (for every
    /// value of the table and the default), so nothing is truncated.
    fn from_i64(v: i64) -> Self;
}

macro_rules! out_int {
    ($($t:ty),*) => {$(
        impl OutInt for $t {
            #[inline]
            fn fits(v: i64) -> bool {
                <$t>::try_from(v).is_ok()
            }
            #[inline]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
        }
    )*};
}
out_int!(i8, i16, i32, i64, u8, u16, u32, u64);

/// Answers as integers of type `T`: the value of the matched slot,
/// `default` on a miss.
pub struct IntSink<'a, T: OutInt> {
    pub vals: &'a mut [T],
    pub ints4: &'a [i64],
    pub ints6: &'a [i64],
    ints: &'a [i64],
    /// Fits `T` (checked by the caller).
    default_i64: i64,
    pub extra: Extra<'a>,
}

impl<'a, T: OutInt> IntSink<'a, T> {
    /// `default` and every value of `ints` must fit `T` (see [`OutInt`]).
    pub fn new(
        vals: &'a mut [T],
        ints: (&'a [i64], &'a [i64]),
        default: i64,
        extra: Extra<'a>,
    ) -> Self {
        IntSink {
            vals,
            ints4: ints.0,
            ints6: ints.1,
            ints: ints.0,
            default_i64: default,
            extra,
        }
    }
}

impl<T: OutInt> Sink for IntSink<'_, T> {
    #[inline]
    fn put(&mut self, pos: usize, slot: u32, len: u8) {
        // Choose the source, then load and convert once: a select the
        // compiler turns into a conditional move. Choosing between two
        // converted values compiled to a branch for the narrow types,
        // mispredicted on every other miss of a random trace (uint32
        // results took 30% more CPU time than int64 ones).
        let v = self.ints.get(slot as usize).unwrap_or(&self.default_i64);
        self.vals[pos] = T::from_i64(*v);
        self.extra.put(pos, slot, len);
    }
}

impl<T: OutInt> FamilySink for IntSink<'_, T> {
    fn family(&mut self, family: u8) {
        self.ints = if family == 4 { self.ints4 } else { self.ints6 };
    }
}

impl<T: OutInt> SplitSink for IntSink<'_, T> {
    fn split_off(&mut self, at: usize) -> Self {
        IntSink {
            vals: cut(&mut self.vals, at),
            extra: self.extra.split_off(at),
            ..*self
        }
    }
}

/// Answers as value slots (IPv6 slots after IPv4's: `v6_base + slot`),
/// `NO_ROUTE` on a miss, for turning into Python objects afterwards.
pub struct SlotSink<'a> {
    pub slots: &'a mut [u32],
    pub v6_base: u32,
    base: u32,
    pub extra: Extra<'a>,
}

impl<'a> SlotSink<'a> {
    pub fn new(slots: &'a mut [u32], v6_base: u32, extra: Extra<'a>) -> Self {
        SlotSink {
            slots,
            v6_base,
            base: 0,
            extra,
        }
    }
}

impl Sink for SlotSink<'_> {
    #[inline]
    fn put(&mut self, pos: usize, slot: u32, len: u8) {
        self.slots[pos] = if slot == NO_ROUTE {
            NO_ROUTE
        } else {
            self.base + slot
        };
        self.extra.put(pos, slot, len);
    }
}

impl FamilySink for SlotSink<'_> {
    fn family(&mut self, family: u8) {
        self.base = if family == 4 { 0 } else { self.v6_base };
    }
}

impl SplitSink for SlotSink<'_> {
    fn split_off(&mut self, at: usize) -> Self {
        SlotSink {
            slots: cut(&mut self.slots, at),
            extra: self.extra.split_off(at),
            ..*self
        }
    }
}

/// Answers as route indices: the matched route's position in
/// `Table.items()` order (IPv4 routes first, each family in walk order,
/// so an IPv6 route's index is the IPv4 count plus its ordinal), `-1` on
/// a miss. Fed by the route-ordinal engine (`with_len`).
pub struct IndexSink<'a> {
    pub index: &'a mut [i64],
    /// The first index of the family being answered.
    base: i64,
    /// The number of IPv4 routes: the first IPv6 index.
    v6_base: i64,
    pub extra: Extra<'a>,
}

impl<'a> IndexSink<'a> {
    pub fn new(index: &'a mut [i64], v6_base: i64, extra: Extra<'a>) -> Self {
        IndexSink {
            index,
            base: 0,
            v6_base,
            extra,
        }
    }
}

impl Sink for IndexSink<'_> {
    #[inline]
    fn put(&mut self, pos: usize, slot: u32, len: u8) {
        // Only misses come here (matches come through `put_route`).
        self.index[pos] = -1;
        self.extra.put(pos, slot, len);
    }

    #[inline]
    fn put_route(&mut self, pos: usize, ordinal: u32, slot: u32, len: u8) {
        self.index[pos] = if slot == NO_ROUTE {
            -1
        } else {
            self.base + i64::from(ordinal)
        };
        self.extra.put(pos, slot, len);
    }
}

impl FamilySink for IndexSink<'_> {
    fn family(&mut self, family: u8) {
        self.base = if family == 4 { 0 } else { self.v6_base };
    }
}

impl SplitSink for IndexSink<'_> {
    fn split_off(&mut self, at: usize) -> Self {
        IndexSink {
            index: cut(&mut self.index, at),
            extra: self.extra.split_off(at),
            ..*self
        }
    }
}

/// A number `count_many` sums per route: `i64` (counts, integer weights)
/// or `f64` (float weights), summed in [`Tally::Acc`].
pub trait Tally: numpy::Element + Copy + Send + Sync + Default {
    /// What totals are summed in: `i128` for integers, which holds any
    /// sum of fewer than 2^32 int64 weights, so a total is exact whatever
    /// the order (threads) and only the final one must fit int64; `f64`
    /// for floats (whose sums depend on the order, as any float sum).
    type Acc: Copy + Send + Sync + Default + std::ops::Add<Output = Self::Acc>;
    fn widen(self) -> Self::Acc;
    /// The final total, or `None` when it does not fit.
    fn narrow(acc: Self::Acc) -> Option<Self>;
}

impl Tally for i64 {
    type Acc = i128;
    #[inline]
    fn widen(self) -> i128 {
        i128::from(self)
    }
    fn narrow(acc: i128) -> Option<i64> {
        i64::try_from(acc).ok()
    }
}

impl Tally for f64 {
    type Acc = f64;
    #[inline]
    fn widen(self) -> f64 {
        self
    }
    fn narrow(acc: f64) -> Option<f64> {
        Some(acc)
    }
}

/// `count_many`'s sink: adds each address's weight (1 without weights)
/// to its matched route's total, routes in `Table.items()` order (as
/// [`IndexSink`]); misses add nothing. Fed by the route-ordinal engine.
pub struct CountSink<'a, T: Tally> {
    /// Owned: each lookup thread sums into its own, added up at the end
    /// ([`CountSink::into_totals`]).
    totals: Vec<T::Acc>,
    /// One per address; `None`: every address weighs `one`.
    weights: Option<&'a [T]>,
    one: T,
    base: usize,
    v6_base: usize,
}

impl<'a, T: Tally> CountSink<'a, T> {
    /// Totals of `routes` routes, IPv6 ones from `v6_base` on.
    pub fn new(routes: usize, weights: Option<&'a [T]>, one: T, v6_base: usize) -> Self {
        CountSink {
            totals: vec![T::Acc::default(); routes],
            weights,
            one,
            base: 0,
            v6_base,
        }
    }

    /// The totals, or `None` when one does not fit `T`.
    pub fn into_totals(self) -> Option<Vec<T>> {
        self.totals.into_iter().map(T::narrow).collect()
    }
}

impl<T: Tally> Sink for CountSink<'_, T> {
    #[inline]
    fn put(&mut self, _pos: usize, _slot: u32, _len: u8) {
        // Only misses come here (matches come through `put_route`).
    }

    #[inline]
    fn put_route(&mut self, pos: usize, ordinal: u32, slot: u32, _len: u8) {
        if slot == NO_ROUTE {
            return;
        }
        let w = self.weights.map_or(self.one, |w| w[pos]);
        let total = &mut self.totals[self.base + ordinal as usize];
        *total = *total + w.widen();
    }
}

impl<T: Tally> FamilySink for CountSink<'_, T> {
    fn family(&mut self, family: u8) {
        self.base = if family == 4 { 0 } else { self.v6_base };
    }
}

impl<T: Tally> SplitSink for CountSink<'_, T> {
    fn split_off(&mut self, at: usize) -> Self {
        let weights = self.weights.map(|w| {
            let (head, tail) = w.split_at(at.min(w.len()));
            self.weights = Some(head);
            tail
        });
        CountSink {
            totals: vec![T::Acc::default(); self.totals.len()],
            weights,
            ..*self
        }
    }

    fn absorb(&mut self, part: Self) {
        for (t, p) in self.totals.iter_mut().zip(part.totals) {
            *t = *t + p;
        }
    }
}

/// The optional outputs: matched prefix lengths (-1 on a miss) and the
/// miss mask (for numpy masked arrays).
#[derive(Default)]
pub struct Extra<'a> {
    pub lens: Option<&'a mut [i16]>,
    pub miss: Option<&'a mut [bool]>,
}

impl<'a> Extra<'a> {
    /// See [`SplitSink::split_off`].
    fn split_off(&mut self, at: usize) -> Extra<'a> {
        Extra {
            lens: self.lens.as_mut().map(|l| cut(l, at)),
            miss: self.miss.as_mut().map(|m| cut(m, at)),
        }
    }

    #[inline]
    fn put(&mut self, pos: usize, slot: u32, len: u8) {
        if let Some(lens) = self.lens.as_deref_mut() {
            lens[pos] = if slot == NO_ROUTE { -1 } else { len as i16 };
        }
        if let Some(miss) = self.miss.as_deref_mut() {
            miss[pos] = slot == NO_ROUTE;
        }
    }
}
