//! The dynamic FIB (`Fib<V>`): after any sequence of updates a flushed
//! snapshot answers exactly what the route table answers; readers running
//! beside the writer only ever see whole published versions; a freed value
//! index never leaks into an older snapshot; memory stays flat over a
//! million updates.

use ipfib::check::{boundary_queries, check_fib_script, FibScript};
use ipfib::engine::poptrie::PoptrieOptions;
use ipfib::engine::Family;
use ipfib::fib::{Fib, FibEngine, FibOptions, FibUpdate, Snapshot};
use ipfib::gen::Rng;
use ipfib::intervals::NO_ROUTE;
use ipfib::prefix::{AnyAddr, AnyPrefix, Prefix};
use ipfib::route_table::RouteTable;
use ipfib::table::Table;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Every engine configuration worth testing: PlanB, and Poptrie with one
/// slot (s = 0: every update rebuilds the whole trie in place), few large
/// slots (s = 4: prefixes shorter than s mark several slots) and the
/// default s = 18. Every side is validated structurally before it is
/// published (`FibOptions::validate`).
fn configs() -> Vec<(String, FibOptions)> {
    let mut out = vec![(
        "planb".to_string(),
        FibOptions {
            validate: true,
            ..FibOptions::with_engine(FibEngine::PlanB)
        },
    )];
    for s in [0u8, 4, 18] {
        let mut o = FibOptions::with_engine(FibEngine::Poptrie);
        o.validate = true;
        o.poptrie = PoptrieOptions {
            direct_bits: Some(s),
            ..PoptrieOptions::default()
        };
        out.push((format!("poptrie s={s}"), o));
    }
    out
}

/// A prefix biased to the edges: lengths 0, 1, 4, 17-19 (around s = 18),
/// the longest two, or any; a few shared bases (nesting, duplicates),
/// all-zeros and all-ones (the ends of the space), and adjacent steps.
fn edge_prefix<A: Family>(rng: &mut Rng, bases: &[A]) -> Prefix<A> {
    let bits = A::BITS as u64;
    let len = match rng.below(8) {
        0 => [0, 1, 4][rng.below(3) as usize],
        1 => 17 + rng.below(3) as u8,
        2 => (bits - rng.below(2)) as u8,
        _ => rng.below(bits + 1) as u8,
    };
    let base = match rng.below(6) {
        0 => A::ZERO,
        1 => A::MAX,
        2 => rng.addr(),
        _ => bases[rng.below(bases.len() as u64) as usize],
    };
    let unit = rng.below(u64::from(len) + 1) as u32;
    let step = if unit == 0 {
        0
    } else {
        1u128 << (bits as u32 - unit)
    };
    let addr = A::from_u128_truncate(
        base.to_u128()
            .wrapping_add(step.wrapping_mul(u128::from(rng.below(4) as u8))),
    );
    Prefix::new_masked(addr, len).expect("len <= BITS")
}

/// Random updates of both families over a fixed pool of edge-case
/// prefixes (so the table reaches a steady size and removals hit) and a
/// small value pool (so value indices are freed and reused all the time).
struct Updates {
    rng: Rng,
    pool: Vec<AnyPrefix>,
}

impl Updates {
    fn new(seed: u64) -> Self {
        Self::longer_than(seed, 0)
    }

    /// Pool prefixes no shorter than `min_len` (short prefixes change
    /// thousands of direct slots: rare in real streams).
    fn longer_than(seed: u64, min_len: u8) -> Self {
        let mut rng = Rng::new(seed);
        let bases4: Vec<u32> = (0..16).map(|_| rng.addr()).collect();
        let bases6: Vec<u128> = (0..16).map(|_| rng.addr()).collect();
        let mut pool: Vec<AnyPrefix> = Vec::with_capacity(3000);
        while pool.len() < 3000 {
            let p: AnyPrefix = if rng.below(4) == 0 {
                edge_prefix(&mut rng, &bases6).into()
            } else {
                edge_prefix(&mut rng, &bases4).into()
            };
            if p.len() >= min_len {
                pool.push(p);
            }
        }
        Updates { rng, pool }
    }

    fn next(&mut self) -> FibUpdate<u32> {
        let p = self.pool[self.rng.below(self.pool.len() as u64) as usize];
        if self.rng.below(3) == 0 {
            FibUpdate::Remove(p)
        } else {
            FibUpdate::Insert(p, self.rng.below(12) as u32)
        }
    }
}

/// Addresses to check a family on: every boundary of its routes and some
/// random ones.
fn queries<A: Family, V>(routes: &RouteTable<A, V>, rng: &mut Rng) -> Vec<A> {
    let mut q = boundary_queries(routes.iter().map(|(p, _)| p));
    q.extend((0..2000).map(|_| rng.addr::<A>()));
    q
}

/// The snapshot answers what `routes` (the reference) answers, single and
/// batch.
fn assert_same(
    snap: &Snapshot<u32>,
    t4: &RouteTable<u32, u32>,
    t6: &RouteTable<u128, u32>,
    what: &str,
) {
    let mut rng = Rng::new(7);
    let q4 = queries(t4, &mut rng);
    let mut out = vec![0; q4.len()];
    snap.lookup_batch_v4(&q4, &mut out);
    for (&a, &i) in q4.iter().zip(&out) {
        let want = t4.lookup(a).map(|(_, v)| v);
        assert_eq!(snap.lookup_v4(a), want, "{what}: v4 {a:#x}");
        assert_eq!(snap.value_v4(i), want, "{what}: v4 batch {a:#x}");
    }
    let q6 = queries(t6, &mut rng);
    let mut out = vec![0; q6.len()];
    snap.lookup_batch_v6(&q6, &mut out);
    for (&a, &i) in q6.iter().zip(&out) {
        let want = t6.lookup(a).map(|(_, v)| v);
        assert_eq!(snap.lookup_v6(a), want, "{what}: v6 {a:#x}");
        assert_eq!(snap.value_v6(i), want, "{what}: v6 batch {a:#x}");
    }
}

#[test]
fn flushed_snapshots_match_the_route_table_after_random_updates() {
    for (name, mut opts) in configs() {
        for seed in 0..4u64 {
            opts.max_pending = [1, 3, 50, 1000][seed as usize];
            let mut fib = Fib::new(opts.clone()).unwrap();
            let mut reference = Table::new();
            let mut ups = Updates::new(seed);
            for round in 0..6 {
                for _ in 0..150 {
                    let u = ups.next();
                    match &u {
                        FibUpdate::Insert(p, v) => {
                            reference.insert(*p, *v).unwrap();
                        }
                        FibUpdate::Remove(p) => {
                            reference.remove(p);
                        }
                    }
                    fib.apply(u).unwrap();
                }
                fib.flush().unwrap();
                assert_eq!(fib.pending(), 0);
                let what = format!("{name} seed {seed} round {round}");
                assert_same(&fib.snapshot(), &reference.v4, &reference.v6, &what);
            }
        }
    }
}

#[test]
fn batches_publish_once_and_replace_all_starts_over() {
    for (name, opts) in configs() {
        let mut fib = Fib::new(FibOptions {
            max_pending: 1,
            ..opts
        })
        .unwrap();
        let mut ups = Updates::new(99);
        let batch: Vec<_> = (0..300).map(|_| ups.next()).collect();
        let before = fib.version();
        fib.apply_batch(batch.clone()).unwrap();
        assert_eq!(
            fib.version(),
            before + 1,
            "{name}: one publication per batch"
        );
        let mut reference = Table::new();
        for u in batch {
            match u {
                FibUpdate::Insert(p, v) => drop(reference.insert(p, v).unwrap()),
                FibUpdate::Remove(p) => drop(reference.remove(&p)),
            }
        }
        assert_same(&fib.snapshot(), &reference.v4, &reference.v6, &name);
        let mut fresh = Table::new();
        fresh.insert("10.0.0.0/8".parse().unwrap(), 5).unwrap();
        fresh.insert("2001:db8::/32".parse().unwrap(), 6).unwrap();
        fib.replace_all(fresh.clone()).unwrap();
        assert_same(&fib.snapshot(), &fresh.v4, &fresh.v6, &name);
        assert_eq!(
            fib.snapshot().lookup(
                "::ffff:10.1.2.3"
                    .parse::<std::net::IpAddr>()
                    .map(ipfib::prefix::AnyAddr::unmapped)
                    .unwrap()
            ),
            Some(&5)
        );
    }
}

/// The recycled-index bug (akvorado's, fixed there with generation
/// numbers): prefix A's value is removed, its index freed, and the route
/// table hands the same index to prefix B's new value. A snapshot taken
/// before must still answer A's value for A and nothing for B; the new one
/// B's value for B and nothing for A.
#[test]
fn a_freed_value_index_never_leaks_into_another_prefix() {
    for (name, opts) in configs() {
        let mut fib: Fib<String> = Fib::new(FibOptions {
            max_pending: 1,
            ..opts
        })
        .unwrap();
        let a: AnyPrefix = "10.1.0.0/16".parse().unwrap();
        let b: AnyPrefix = "192.168.0.0/16".parse().unwrap();
        let (in_a, in_b) = (0x0a01_0203u32, 0xc0a8_0001u32);
        fib.insert(a, "AS-A".to_string()).unwrap();
        let index_a = fib
            .routes_v4()
            .get_index(&"10.1.0.0/16".parse().unwrap())
            .unwrap();
        let old = fib.snapshot();
        assert_eq!(old.lookup_v4(in_a).map(String::as_str), Some("AS-A"));
        let mut held = vec![0];
        old.lookup_batch_v4(&[in_a], &mut held);
        fib.remove(&a).unwrap();
        fib.insert(b, "AS-B".to_string()).unwrap();
        // `old` holds its version; the publication goes out all the same
        // (nothing waits for readers).
        fib.flush().unwrap();
        let index_b = fib
            .routes_v4()
            .get_index(&"192.168.0.0/16".parse().unwrap())
            .unwrap();
        assert_eq!(
            index_a, index_b,
            "{name}: the route table reuses the freed index"
        );
        let new = fib.snapshot();
        assert_eq!(
            old.lookup_v4(in_a).map(String::as_str),
            Some("AS-A"),
            "{name}"
        );
        assert_eq!(
            old.value_v4(held[0]).map(String::as_str),
            Some("AS-A"),
            "{name}"
        );
        assert_eq!(old.lookup_v4(in_b), None, "{name}");
        assert_eq!(new.lookup_v4(in_a), None, "{name}");
        assert_eq!(
            new.lookup_v4(in_b).map(String::as_str),
            Some("AS-B"),
            "{name}"
        );
        drop(old);
        // More publications, with the freed and reused index moving again.
        fib.remove(&b).unwrap();
        fib.insert(a, "AS-C".to_string()).unwrap();
        fib.flush().unwrap();
        let last = fib.snapshot();
        assert_eq!(
            last.lookup_v4(in_a).map(String::as_str),
            Some("AS-C"),
            "{name}"
        );
        assert_eq!(last.lookup_v4(in_b), None, "{name}");
        assert_eq!(
            new.lookup_v4(in_b).map(String::as_str),
            Some("AS-B"),
            "{name}"
        );
    }
}

/// A snapshot held across many publications never blocks the writer or
/// puts a publication off, and keeps answering its version.
#[test]
fn a_long_held_snapshot_neither_blocks_nor_changes() {
    for (name, opts) in configs() {
        let mut fib = Fib::new(FibOptions {
            max_pending: 1,
            ..opts
        })
        .unwrap();
        fib.insert("10.0.0.0/8".parse().unwrap(), 1).unwrap();
        let held = fib.snapshot();
        let mut reference = Table::new();
        reference.insert("10.0.0.0/8".parse().unwrap(), 1).unwrap();
        let frozen = reference.clone();
        let mut ups = Updates::new(5);
        for _ in 0..50 {
            let u = ups.next();
            match &u {
                FibUpdate::Insert(p, v) => drop(reference.insert(*p, *v).unwrap()),
                FibUpdate::Remove(p) => drop(reference.remove(p)),
            }
            fib.apply(u).unwrap();
            assert_eq!(fib.pending(), 0, "{name}: a publication was put off");
        }
        assert_same(&held, &frozen.v4, &frozen.v6, &name);
        assert_same(&fib.snapshot(), &reference.v4, &reference.v6, &name);
    }
}

/// Linearizability-style stress: one writer applies random updates and
/// records, per published version, how many updates it holds; readers take
/// a snapshot per batch and keep (version, address, answer) samples. Every
/// sample must equal the route table after exactly that version's updates,
/// and each reader's versions never go back. Both families: IPv4 batches
/// and IPv6 batches alternate, the IPv6 addresses drawn under the pool's
/// IPv6 prefixes so that they hit routes. Bounded: about a second per
/// engine.
#[test]
fn readers_see_exactly_the_published_versions() {
    for (name, opts) in configs() {
        let opts = FibOptions {
            max_pending: 7,
            max_delay: Duration::from_micros(50),
            ..opts
        };
        let mut fib = Fib::new(opts).unwrap();
        // s = 18: prefixes shorter than /8 touch over a thousand slots each
        // (a fresh build); they are tested at s = 0 and 4.
        let mut ups = Updates::longer_than(42, if name.ends_with("18") { 8 } else { 0 });
        let log: Vec<FibUpdate<u32>> = (0..if name.ends_with("18") { 3000 } else { 6000 })
            .map(|_| ups.next())
            .collect();
        // (version, updates applied) for every publication.
        let versions = Arc::new(Mutex::new(vec![(0u64, 0usize)]));
        let stop = Arc::new(AtomicBool::new(false));
        let mut readers = Vec::new();
        let started = Arc::new(AtomicU64::new(0));
        let v6_prefixes: Arc<Vec<Prefix<u128>>> = Arc::new(
            ups.pool
                .iter()
                .filter_map(|p| match p {
                    AnyPrefix::V6(p) => Some(*p),
                    AnyPrefix::V4(_) => None,
                })
                .collect(),
        );
        for r in 0..2u64 {
            let reader = fib.reader();
            let v6_prefixes = Arc::clone(&v6_prefixes);
            let stop = Arc::clone(&stop);
            let started = Arc::clone(&started);
            readers.push(std::thread::spawn(move || {
                let mut rng = Rng::new(1000 + r);
                let mut samples: Vec<(u64, AnyAddr, Option<u32>)> = Vec::new();
                let mut last = 0;
                let mut batches = 0u64;
                let mut last_kept = u64::MAX;
                let mut addrs = vec![0u32; 16];
                let mut addrs6 = vec![0u128; 16];
                let mut out = vec![0u32; 16];
                while !stop.load(Ordering::Relaxed) {
                    let snap = reader.snapshot();
                    let v = snap.version();
                    assert!(v >= last, "a reader's versions went back: {last} -> {v}");
                    last = v;
                    let v6 = batches % 2 == 1;
                    if v6 {
                        for a in addrs6.iter_mut() {
                            let p = v6_prefixes[rng.below(v6_prefixes.len() as u64) as usize];
                            let host = if p.len() == 128 {
                                0
                            } else {
                                rng.addr::<u128>() >> p.len()
                            };
                            *a = p.addr() | host;
                        }
                        snap.lookup_batch_v6(&addrs6, &mut out);
                    } else {
                        for a in addrs.iter_mut() {
                            // Half near the edge-case bases, half anywhere.
                            *a = if rng.below(2) == 0 {
                                rng.addr()
                            } else {
                                0x0a00_0000 | rng.below(1 << 24) as u32
                            };
                        }
                        snap.lookup_batch_v4(&addrs, &mut out);
                    }
                    started.fetch_add(1, Ordering::Relaxed);
                    // Keep every batch of a new version, and one pair of
                    // batches (IPv4, IPv6) in 16.
                    let keep = v != last_kept || batches % 32 < 2;
                    batches += 1;
                    last_kept = v;
                    for k in 0..out.len() {
                        let i = out[k];
                        let (a, single, by_index) = if v6 {
                            let a = addrs6[k];
                            (
                                AnyAddr::V6(a),
                                snap.lookup_v6(a).copied(),
                                snap.value_v6(i).copied(),
                            )
                        } else {
                            let a = addrs[k];
                            (
                                AnyAddr::V4(a),
                                snap.lookup_v4(a).copied(),
                                snap.value_v4(i).copied(),
                            )
                        };
                        assert_eq!(single, by_index, "batch and single differ");
                        assert!(
                            i == NO_ROUTE || single.is_some(),
                            "index {i} without a value"
                        );
                        if keep && samples.len() < 400_000 {
                            samples.push((v, a, single));
                        }
                    }
                }
                samples
            }));
        }
        while started.load(Ordering::Relaxed) < 2 {
            std::thread::yield_now();
        }
        let start = Instant::now();
        for (k, u) in log.iter().enumerate() {
            fib.apply(u.clone()).unwrap();
            let mut vs = versions.lock().unwrap();
            if vs.last().map(|x| x.0) != Some(fib.version()) {
                vs.push((fib.version(), k + 1));
            }
        }
        fib.flush().unwrap();
        versions.lock().unwrap().push((fib.version(), log.len()));
        std::thread::sleep(Duration::from_millis(20));
        stop.store(true, Ordering::Relaxed);
        let mut samples: Vec<_> = readers
            .into_iter()
            .flat_map(|r| r.join().unwrap())
            .collect();
        let elapsed = start.elapsed();
        samples.sort_unstable_by_key(|s| s.0);
        let versions = versions.lock().unwrap().clone();
        let mut reference = Table::new();
        let mut applied = 0;
        let mut seen = std::collections::HashSet::new();
        for (v, a, got) in &samples {
            let &(_, upto) = versions
                .iter()
                .find(|x| x.0 == *v)
                .unwrap_or_else(|| panic!("{name}: version {v} was never published"));
            while applied < upto {
                match &log[applied] {
                    FibUpdate::Insert(p, val) => drop(reference.insert(*p, *val).unwrap()),
                    FibUpdate::Remove(p) => drop(reference.remove(p)),
                }
                applied += 1;
            }
            seen.insert(*v);
            let want = match *a {
                AnyAddr::V4(a) => reference.v4.lookup(a).map(|(_, v)| *v),
                AnyAddr::V6(a) => reference.v6.lookup(a).map(|(_, v)| *v),
            };
            assert_eq!(*got, want, "{name}: version {v} address {a:?}");
        }
        assert!(samples.len() > 1000, "{name}: readers barely ran");
        let hits6 = samples
            .iter()
            .filter(|s| matches!(s.1, AnyAddr::V6(_)) && s.2.is_some())
            .count();
        let all6 = samples
            .iter()
            .filter(|s| matches!(s.1, AnyAddr::V6(_)))
            .count();
        eprintln!("{name}: {hits6} of {all6} IPv6 samples hit");
        assert!(hits6 > 100, "{name}: only {hits6} IPv6 samples hit a route");
        assert!(
            seen.len() >= 2,
            "{name}: readers saw {} versions",
            seen.len()
        );
        eprintln!(
            "{name}: {} updates, {} versions published, {} seen by readers, {} samples, {elapsed:?}, {:?}",
            log.len(),
            versions.len(),
            seen.len(),
            samples.len(),
            fib.stats()
        );
    }
}

/// Two million updates on a small table: the writer's memory (route tables,
/// the Poptrie arrays, value slots) stays within a constant factor of a
/// fresh build, because a full arena is compacted by a fresh build.
#[test]
fn memory_stays_flat_over_two_million_updates() {
    {
        let name = "poptrie s=18";
        let mut fib = Fib::new(FibOptions {
            max_pending: 16,
            ..FibOptions::with_engine(FibEngine::Poptrie)
        })
        .unwrap();
        // /16 and longer, like real update streams: at most 4 slots each.
        let mut ups = Updates::longer_than(3, 16);
        let mut peak_after_warmup = 0;
        let mut at_warmup = 0;
        for k in 0..2_000_000u32 {
            fib.apply(ups.next()).unwrap();
            if k == 100_000 {
                at_warmup = fib.footprint_bytes();
            }
            if k > 100_000 && k.is_multiple_of(10_000) {
                peak_after_warmup = peak_after_warmup.max(fib.footprint_bytes());
            }
        }
        fib.flush().unwrap();
        eprintln!(
            "{name}: footprint at 100K updates {at_warmup} B, peak after {peak_after_warmup} B, stats {:?}",
            fib.stats()
        );
        assert!(
            peak_after_warmup <= at_warmup * 3 / 2,
            "{name}: {at_warmup} -> {peak_after_warmup} bytes"
        );
        // Room comes back: without reclamation the arrays fill and about
        // one publication in eight builds afresh; with it, about 0.7%
        // (bound: 2%).
        let st = fib.stats();
        assert!(
            st.full_builds * 50 <= st.publications,
            "{name}: {} full builds in {} publications",
            st.full_builds,
            st.publications
        );
    }
    // PlanB rebuilds per publication: fewer, larger batches.
    let mut fib = Fib::new(FibOptions {
        max_pending: 1000,
        ..FibOptions::with_engine(FibEngine::PlanB)
    })
    .unwrap();
    let mut ups = Updates::longer_than(4, 8);
    let mut sizes = Vec::new();
    for k in 0..300_000u32 {
        fib.apply(ups.next()).unwrap();
        if (k + 1).is_multiple_of(50_000) {
            sizes.push(fib.footprint_bytes());
        }
    }
    assert!(
        sizes.iter().all(|&s| s <= sizes[0] * 3 / 2),
        "planb: {sizes:?}"
    );
}

/// `replace_all` after a long history, then one small change: every slot
/// of the published side must come from the new table. (A Poptrie copy
/// kept from before the replacement once went out with only the changed
/// slot rebuilt, answering the old table everywhere else.) Then more small
/// changes, so the side replaced afterwards is checked too.
#[test]
fn replace_all_then_small_changes_publish_the_new_table_everywhere() {
    for (name, opts) in configs() {
        let mut fib = Fib::new(FibOptions {
            max_pending: 16,
            ..opts
        })
        .unwrap();
        let mut ups = Updates::new(11);
        for _ in 0..3000 {
            fib.apply(ups.next()).unwrap();
        }
        fib.flush().unwrap();
        let mut reference = Table::new();
        reference.insert("10.0.0.0/8".parse().unwrap(), 5).unwrap();
        reference
            .insert("2001:db8::/32".parse().unwrap(), 6)
            .unwrap();
        fib.replace_all(reference.clone()).unwrap();
        assert_same(&fib.snapshot(), &reference.v4, &reference.v6, &name);
        for (k, p) in ["192.0.2.0/24", "2001:db8:1::/48", "10.1.0.0/16", "::/0"]
            .into_iter()
            .enumerate()
        {
            let p: AnyPrefix = p.parse().unwrap();
            reference.insert(p, 100 + k as u32).unwrap();
            fib.insert(p, 100 + k as u32).unwrap();
            fib.flush().unwrap();
            let what = format!("{name}: change {k} after replace_all");
            assert_same(&fib.snapshot(), &reference.v4, &reference.v6, &what);
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(ipfib::check::cases(96)))]

    /// Scripts of inserts, removes, batches, `replace_all`, flushes and
    /// snapshots held across them: every published version answers what
    /// the oracle answered when it was published (the fuzz target
    /// `fib_ops` runs the same check on coverage-guided input).
    #[test]
    fn fib_scripts_match_the_oracle(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..1500)) {
        let script = FibScript::decode(&bytes, 300);
        check_fib_script(&script).map_err(proptest::test_runner::TestCaseError::fail)?;
    }
}

/// Every input the `fib_ops` fuzz target ever failed on (and its seed
/// corpus) replays clean: `tests/fuzz_regressions/fib_ops/`.
#[test]
fn fib_ops_fuzz_regressions_replay_clean() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions/fib_ops");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let script = FibScript::decode(&bytes, ipfib::check::FIB_FUZZ_MAX_OPS);
        if let Err(e) = check_fib_script(&script) {
            panic!("{}: {e}", path.display());
        }
        n += 1;
    }
    assert!(n > 0, "no regression inputs in {}", dir.display());
}
