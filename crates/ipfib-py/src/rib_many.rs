//! `Rib.lookup_many`: flow enrichment. The inputs are `Table.lookup_many`'s
//! (classified by `many.rs`, decoded by `batch.rs`); the lookups go through
//! the RIB's batch path without the GIL, and each answer is scattered into
//! per-field numpy arrays.
//!
//! With per-address next hops (`nexthops=`), each round of addresses is
//! grouped by next hop and every group is one batch lookup with that next
//! hop in its query, so the answers equal `lookup(addr, nexthop=...)`
//! address by address.

use crate::batch::{BadItem, Items, Mixed, OnError};
use crate::many::{bad_item, borrow_err, classify, slice_err};
use ipfib_rib::{Hit, PeerFilter, Query};
use numpy::{PyArray1, PyArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Addresses per call of the RIB's batch lookup: a batch's answers (tens
/// of KB) stay in cache until they are scattered.
const BATCH: usize = 1024;

/// Next hops are numbered from 1 in the order first seen ([`NextHops`]);
/// 0 is "none", so per-address numbers start as zeroed memory (fresh
/// pages, no prefill).
const NO_NEXT_HOP: u32 = 0;

/// Distinct next hops and their numbers (a handful per RIB: one or a few
/// per peer), so that a result holds one Python string per distinct next
/// hop rather than one per address.
#[derive(Default)]
struct NextHops {
    numbers: HashMap<IpAddr, u32>,
    /// Next hop `k` is `distinct[k - 1]`.
    distinct: Vec<IpAddr>,
}

impl NextHops {
    fn number(&mut self, a: IpAddr) -> u32 {
        let next = self.distinct.len() as u32 + 1;
        *self.numbers.entry(a).or_insert_with(|| {
            self.distinct.push(a);
            next
        })
    }

    fn get(&self, number: u32) -> Option<IpAddr> {
        let i = number.checked_sub(1)?;
        self.distinct.get(i as usize).copied()
    }
}

/// [`NextHops`] for answers: most answers of a peer share its next hop,
/// which then costs a compare, not a hash.
#[derive(Default)]
struct AnswerNextHops {
    next_hops: NextHops,
    /// Per peer id, the last next hop seen and its number.
    last_by_peer: Vec<Option<(IpAddr, u32)>>,
}

impl AnswerNextHops {
    #[inline]
    fn number(&mut self, h: &Hit) -> u32 {
        let Some(a) = h.next_hop else {
            return NO_NEXT_HOP;
        };
        let p = h.peer as usize;
        if let Some(Some((last, k))) = self.last_by_peer.get(p) {
            if *last == a {
                return *k;
            }
        }
        let k = self.next_hops.number(a);
        if p >= self.last_by_peer.len() {
            self.last_by_peer.resize(p + 1, None);
        }
        self.last_by_peer[p] = Some((a, k));
        k
    }
}

/// The per-field outputs, written once per position.
struct Out<'a> {
    found: &'a mut [bool],
    origin_asn: &'a mut [u32],
    prefix_len: &'a mut [i16],
    peer: &'a mut [i64],
    /// Next-hop numbers (see [`NO_NEXT_HOP`]).
    next_hop: &'a mut [u32],
    next_hops: AnswerNextHops,
}

/// One answer's fields: found, origin ASN, prefix length, peer, next hop.
#[inline]
fn fields(hit: &Option<Hit>, nh: &mut AnswerNextHops) -> (bool, u32, i16, i64, u32) {
    match hit {
        Some(h) => (
            true,
            h.origin_asn.unwrap_or(0),
            i16::from(h.prefix_len),
            i64::from(h.peer),
            nh.number(h),
        ),
        None => (false, 0, -1, -1, NO_NEXT_HOP),
    }
}

impl<'a> Out<'a> {
    /// Keep positions `..at`; the outputs of positions `at..` (numbered
    /// from 0) with next-hop numbers of their own, for another thread
    /// ([`Out::absorb`] renumbers them).
    fn split_off(&mut self, at: usize) -> Out<'a> {
        fn cut<'a, T>(s: &mut &'a mut [T], at: usize) -> &'a mut [T] {
            let (head, tail) = std::mem::take(s).split_at_mut(at);
            *s = head;
            tail
        }
        Out {
            found: cut(&mut self.found, at),
            origin_asn: cut(&mut self.origin_asn, at),
            prefix_len: cut(&mut self.prefix_len, at),
            peer: cut(&mut self.peer, at),
            next_hop: cut(&mut self.next_hop, at),
            next_hops: AnswerNextHops::default(),
        }
    }

    /// A part answered by another thread: its next-hop numbers made this
    /// one's (every distinct next hop numbered here, in the parts' order).
    fn absorb(&mut self, part: Out<'_>) {
        let map: Vec<u32> = part
            .next_hops
            .next_hops
            .distinct
            .iter()
            .map(|&a| self.next_hops.next_hops.number(a))
            .collect();
        for k in part.next_hop.iter_mut() {
            if let Some(i) = k.checked_sub(1) {
                *k = map.get(i as usize).copied().unwrap_or(NO_NEXT_HOP);
            }
        }
    }

    #[inline]
    fn put(&mut self, pos: usize, hit: &Option<Hit>) {
        let (f, o, l, p, n) = fields(hit, &mut self.next_hops);
        self.found[pos] = f;
        self.origin_asn[pos] = o;
        self.prefix_len[pos] = l;
        self.peer[pos] = p;
        self.next_hop[pos] = n;
    }

    /// [`Out::put`] for positions `start..start + hits.len()`: each output
    /// sliced once, no per-element bounds checks.
    #[inline]
    fn put_range(&mut self, start: usize, hits: &[Option<Hit>]) {
        let end = start + hits.len();
        let found = &mut self.found[start..end];
        let origin_asn = &mut self.origin_asn[start..end];
        let prefix_len = &mut self.prefix_len[start..end];
        let peer = &mut self.peer[start..end];
        let next_hop = &mut self.next_hop[start..end];
        for (j, h) in hits.iter().enumerate() {
            let (f, o, l, p, n) = fields(h, &mut self.next_hops);
            found[j] = f;
            origin_asn[j] = o;
            prefix_len[j] = l;
            peer[j] = p;
            next_hop[j] = n;
        }
    }
}

/// Look `addrs` up with `q` in batches of [`BATCH`]; answer `i` goes to
/// position `pos(i)` (see [`lookup_all`] for positions `0..n`).
fn lookup_run<A: Copy>(
    addrs: &[A],
    pos: impl Fn(usize) -> usize,
    q: &Query,
    batch: &impl Fn(&[A], &Query, &mut [Option<Hit>]),
    hits: &mut [Option<Hit>],
    out: &mut Out<'_>,
) {
    for (k, chunk) in addrs.chunks(BATCH).enumerate() {
        let hits = &mut hits[..chunk.len()];
        batch(chunk, q, hits);
        for (j, h) in hits.iter().enumerate() {
            out.put(pos(k * BATCH + j), h);
        }
    }
}

/// [`lookup_run`] with answer `i` at position `i`.
fn lookup_all<A: Copy>(
    addrs: &[A],
    q: &Query,
    batch: &impl Fn(&[A], &Query, &mut [Option<Hit>]),
    hits: &mut [Option<Hit>],
    out: &mut Out<'_>,
) {
    for (k, chunk) in addrs.chunks(BATCH).enumerate() {
        let hits = &mut hits[..chunk.len()];
        batch(chunk, q, hits);
        out.put_range(k * BATCH, hits);
    }
}

/// The `nexthops=` argument: a next-hop number per position.
struct FlowNextHops {
    by_pos: Vec<u32>,
    next_hops: NextHops,
}

/// [`FlowNextHops`] of one share of the positions (numbered from 0).
#[derive(Clone, Copy)]
struct NhView<'a> {
    by_pos: &'a [u32],
    next_hops: &'a NextHops,
}

impl FlowNextHops {
    fn view(&self, start: usize, end: usize) -> NhView<'_> {
        NhView {
            by_pos: &self.by_pos[start..end],
            next_hops: &self.next_hops,
        }
    }
}

/// The lookups of one family of one round: grouped by next hop when there
/// are per-address next hops, else all with `base`.
#[allow(clippy::too_many_arguments)]
fn lookup_family<A: Copy>(
    addrs: &[A],
    pos: &[u32],
    base: &Query,
    nexthops: Option<NhView<'_>>,
    batch: &impl Fn(&[A], &Query, &mut [Option<Hit>]),
    hits: &mut [Option<Hit>],
    scratch: &mut (Vec<(u32, u32)>, Vec<A>, Vec<u32>),
    out: &mut Out<'_>,
) {
    let Some(nh) = nexthops else {
        lookup_run(addrs, |i| pos[i] as usize, base, batch, hits, out);
        return;
    };
    let (order, group_addrs, group_pos) = scratch;
    order.clear();
    order.extend(
        pos.iter()
            .enumerate()
            .map(|(i, &p)| (nh.by_pos[p as usize], i as u32)),
    );
    order.sort_unstable();
    for run in order.chunk_by(|a, b| a.0 == b.0) {
        group_addrs.clear();
        group_pos.clear();
        for &(_, i) in run {
            group_addrs.push(addrs[i as usize]);
            group_pos.push(pos[i as usize]);
        }
        let q = Query {
            peer: base.peer.clone(),
            next_hop: nh.next_hops.get(run[0].0),
            ..base.clone()
        };
        let gp = &*group_pos;
        lookup_run(group_addrs, |i| gp[i] as usize, &q, batch, hits, out);
    }
}

/// Decode `nexthops` (any input `lookup_many` takes; `None` items: no
/// preference) into per-position numbers.
fn next_hops(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    n: usize,
    on_error: OnError,
) -> PyResult<FlowNextHops> {
    let named = |e: PyErr| {
        if e.is_instance_of::<PyValueError>(py) {
            PyValueError::new_err(format!("nexthops: {}", e.value(py)))
        } else {
            e
        }
    };
    let input = classify(obj, on_error).map_err(named)?;
    if input.len() != n {
        return Err(PyValueError::new_err(format!(
            "nexthops holds {} items, addrs {n}: one next hop (or None) per address",
            input.len()
        )));
    }
    let items = input.items()?;
    let decoded: Result<FlowNextHops, BadItem> = py.detach(|| {
        let mut by_pos = vec![NO_NEXT_HOP; n];
        let mut next_hops = NextHops::default();
        items.each_chunk(on_error, |m: &Mixed| {
            let (a4, p4) = m.v4();
            for (&a, &p) in a4.iter().zip(p4) {
                by_pos[p as usize] = next_hops.number(IpAddr::V4(Ipv4Addr::from(a)));
            }
            let (a6, p6) = m.v6();
            for (&a, &p) in a6.iter().zip(p6) {
                by_pos[p as usize] = next_hops.number(IpAddr::V6(Ipv6Addr::from(a)));
            }
            Ok::<(), BadItem>(())
        })?;
        Ok(FlowNextHops { by_pos, next_hops })
    });
    decoded.map_err(|e| named(bad_item(e)))
}

/// Run every lookup of `items` into `out` (no GIL needed) on up to
/// `threads` threads ([`crate::many::on_shares`]): one `Out` part per
/// share, the next-hop numbers of the parts renumbered into `out`'s at
/// the end.
#[allow(clippy::too_many_arguments)]
fn run_split(
    rib: &ipfib_rib::Rib,
    items: &Items<'_>,
    on_error: OnError,
    base: &Query,
    nexthops: Option<&FlowNextHops>,
    out: &mut Out<'_>,
    threads: usize,
) -> Result<(), BadItem> {
    crate::many::on_shares(
        items,
        threads,
        out,
        |o, at| o.split_off(at),
        |o, part| o.absorb(part),
        |share, start, end, part| {
            let nh = nexthops.map(|h| h.view(start, end));
            run(rib, share, on_error, base, nh, part).map_err(|mut b| {
                b.index += start;
                b
            })
        },
    )
}

/// Run every lookup of `items` into `out` on this thread.
fn run(
    rib: &ipfib_rib::Rib,
    items: &Items<'_>,
    on_error: OnError,
    base: &Query,
    nexthops: Option<NhView<'_>>,
    out: &mut Out<'_>,
) -> Result<(), BadItem> {
    let mut hits = vec![None; BATCH];
    let v4 = |a: &[u32], q: &Query, o: &mut [Option<Hit>]| rib.lookup_batch_v4(a, q, o);
    let v6 = |a: &[u128], q: &Query, o: &mut [Option<Hit>]| rib.lookup_batch_v6(a, q, o);
    if let (Items::V4(addrs), None) = (items, nexthops) {
        // The common case (IPv4 flows as numbers): no decoding, no split.
        lookup_all(addrs, base, &v4, &mut hits, out);
        return Ok(());
    }
    let mut scratch4 = Default::default();
    let mut scratch6 = Default::default();
    items.each_chunk(on_error, |m: &Mixed| {
        for &p in m.nones() {
            out.put(p as usize, &None);
        }
        let (a4, p4) = m.v4();
        let h = &mut hits;
        lookup_family(a4, p4, base, nexthops, &v4, h, &mut scratch4, out);
        let (a6, p6) = m.v6();
        lookup_family(a6, p6, base, nexthops, &v6, h, &mut scratch6, out);
        Ok(())
    })
}

/// Vectorised lookups (see `_ipfib.pyi`).
/// `peer` is the `peer=` argument read (`rib.rs`), `on_error` the
/// `errors=` one.
#[allow(clippy::too_many_arguments)]
pub fn lookup_many<'py>(
    the_rib: &ipfib_rib::Rib,
    py: Python<'py>,
    addrs: &Bound<'py, PyAny>,
    peer: Option<PeerFilter>,
    nexthops: Option<&Bound<'py, PyAny>>,
    on_error: OnError,
    rpki: Option<&crate::rpki::Vrps>,
    threads: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let base = Query {
        peer,
        ..Query::default()
    };
    let input = classify(addrs, on_error)?;
    let n = input.len();
    if u32::try_from(n).is_err() {
        return Err(PyValueError::new_err(
            "lookup_many: at most 2^32 - 1 addresses per call",
        ));
    }
    let nexthops = nexthops
        .filter(|o| !o.is_none())
        .map(|o| next_hops(py, o, n, on_error))
        .transpose()?;
    let found = PyArray1::<bool>::zeros(py, n, false);
    let origin_asn = PyArray1::<u32>::zeros(py, n, false);
    let prefix_len = PyArray1::<i16>::zeros(py, n, false);
    let peer_ids = PyArray1::<i64>::zeros(py, n, false);
    let mut next_hop = vec![NO_NEXT_HOP; n];
    let distinct = {
        let mut f = found.try_readwrite().map_err(borrow_err)?;
        let mut o = origin_asn.try_readwrite().map_err(borrow_err)?;
        let mut l = prefix_len.try_readwrite().map_err(borrow_err)?;
        let mut p = peer_ids.try_readwrite().map_err(borrow_err)?;
        let mut out = Out {
            found: f.as_slice_mut().map_err(slice_err)?,
            origin_asn: o.as_slice_mut().map_err(slice_err)?,
            prefix_len: l.as_slice_mut().map_err(slice_err)?,
            peer: p.as_slice_mut().map_err(slice_err)?,
            next_hop: &mut next_hop,
            next_hops: AnswerNextHops::default(),
        };
        let items = input.items()?;
        py.detach(|| {
            run_split(
                the_rib,
                &items,
                on_error,
                &base,
                nexthops.as_ref(),
                &mut out,
                threads,
            )
        })
        .map_err(bad_item)?;
        out.next_hops.next_hops.distinct
    };
    // One string per distinct next hop, shared by every row that has it.
    let names: Vec<Py<PyAny>> = distinct
        .iter()
        .map(|a| PyString::new(py, &a.to_string()).into_any().unbind())
        .collect();
    let none = py.None();
    let objects: Vec<Py<PyAny>> = next_hop
        .iter()
        .map(|&k| match k.checked_sub(1) {
            Some(i) => names.get(i as usize).unwrap_or(&none).clone_ref(py),
            None => none.clone_ref(py),
        })
        .collect();
    let d = PyDict::new(py);
    d.set_item("found", &found)?;
    d.set_item("origin_asn", origin_asn)?;
    d.set_item("prefix_len", prefix_len)?;
    d.set_item("next_hop", PyArray1::from_vec(py, objects))?;
    if let Some(v) = rpki {
        let found_now: Vec<bool> = found.readonly().as_slice().map_err(slice_err)?.to_vec();
        let (rov, aspa) = rpki_states(
            the_rib,
            py,
            &input.items()?,
            on_error,
            &base,
            nexthops.as_ref(),
            &found_now,
            v,
        )?;
        d.set_item("rov", PyArray1::from_vec(py, rov))?;
        d.set_item("aspa", PyArray1::from_vec(py, aspa))?;
    }
    d.set_item("peer", peer_ids)?;
    Ok(d)
}

/// The ROV and ASPA codes of each found row's chosen route (`Vrps.STATES`,
/// `Vrps.ASPA_STATES`; 255 where nothing was found): a second pass that
/// looks each found address up again for its whole route (its prefix and
/// AS path), with the same query as the batch (peer, the row's next hop).
#[allow(clippy::too_many_arguments)]
fn rpki_states(
    rib: &ipfib_rib::Rib,
    py: Python<'_>,
    items: &Items<'_>,
    on_error: OnError,
    base: &Query,
    nexthops: Option<&FlowNextHops>,
    found: &[bool],
    v: &crate::rpki::Vrps,
) -> PyResult<(Vec<u8>, Vec<u8>)> {
    let n = found.len();
    py.detach(|| {
        let mut rov = vec![crate::rpki::NO_ROUTE; n];
        let mut aspa = vec![crate::rpki::NO_ROUTE; n];
        let mut one = |addr: ipfib::prefix::AnyAddr, p: usize| {
            if !found.get(p).copied().unwrap_or(false) {
                return;
            }
            let q = match nexthops {
                Some(nh) => Query {
                    next_hop: nh.next_hops.get(nh.by_pos[p]),
                    ..base.clone()
                },
                None => base.clone(),
            };
            if let Some(r) = rib.lookup(addr, &q) {
                (rov[p], aspa[p]) = v.route_codes(&r);
            }
        };
        items.each_chunk(on_error, |m: &Mixed| {
            let (a4, p4) = m.v4();
            for (&a, &p) in a4.iter().zip(p4) {
                one(ipfib::prefix::AnyAddr::V4(a), p as usize);
            }
            let (a6, p6) = m.v6();
            for (&a, &p) in a6.iter().zip(p6) {
                one(ipfib::prefix::AnyAddr::V6(a), p as usize);
            }
            Ok::<(), BadItem>(())
        })?;
        Ok((rov, aspa))
    })
    .map_err(bad_item)
}
