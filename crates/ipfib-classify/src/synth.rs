//! `ipfib classify --synthetic N`: the classifier's rate on an in-memory
//! capture (no disk, no page cache), on one thread or fanned out over N
//! counting threads besides the reading one ([`crate::fan`]). The capture is N 64-byte
//! Ethernet frames in pcap form: sources are the real addresses of
//! `--pcap` (both directions of every packet), destinations drawn from
//! 65,536 random hosts inside the networks (per family); three in four frames are incoming, one in eight
//! outgoing (the two swapped), one in eight between two capture addresses.
//! Frames are spread over ten 1-second windows. Each pass reads the
//! capture, decodes, looks up both addresses, counts every network,
//! hostgroup, host and source, and closes the windows: the whole work of
//! the report, less printing it.

use super::capture::{Capture, ReadError};
use super::count::{Classifier, Threshold};
use super::decode::{decode, Packet};
use crate::count_capture;
use crate::Networks;
use ipfib::gen::Rng;
use std::path::Path;
use std::time::Instant;

#[derive(Clone, Copy)]
enum A {
    V4(u32),
    V6(u128),
}

/// The synthetic capture and what its first pass counted.
pub struct Synthetic {
    /// Frames in the capture, and its size in bytes.
    pub frames: usize,
    pub bytes: usize,
    /// Share of IPv6 frames (that of the addresses of `pcap`).
    pub v6_share: f64,
    /// Packets per direction: incoming, outgoing, internal, other.
    pub directions: Vec<u64>,
    /// Hosts and remote sources the counter holds at the end.
    pub hosts: usize,
    pub sources: usize,
}

/// Build `n` synthetic frames from the addresses of the capture `pcap`
/// and the networks of `table`, classify them `passes` times (at least
/// once), and return each pass's rate in millions of packets per second.
/// `first` is told about the capture after the first pass; every later
/// pass must count the same, or this is an error.
pub fn bench<T: Networks + Sync>(
    table: &T,
    pcap: &Path,
    n: usize,
    passes: usize,
    threads: usize,
    thresholds: Vec<Threshold>,
    first: impl FnOnce(&Synthetic),
) -> Result<Vec<f64>, String> {
    let (pool4, pool6) = capture_addresses(pcap)?;
    if pool4.is_empty() && pool6.is_empty() {
        return Err(format!(
            "{}: no IP packets to take addresses from",
            pcap.display()
        ));
    }
    let mut rng = Rng::new(42);
    let inside4: Vec<_> = (0..table.routes_v4() as u32)
        .filter_map(|o| table.route_v4(o).map(|r| r.0))
        .collect();
    let inside6: Vec<_> = (0..table.routes_v6() as u32)
        .filter_map(|o| table.route_v6(o).map(|r| r.0))
        .collect();
    // The family of each frame follows the capture's mix.
    let v6_share = pool6.len() as f64 / (pool4.len() + pool6.len()) as f64;
    // Destinations: a fixed set of hosts inside the networks (at most
    // 65,536, as a network's busy hosts are), drawn at random per frame.
    let hosts = 65_536usize;
    let inside4: Vec<u32> = if inside4.is_empty() {
        Vec::new()
    } else {
        (0..hosts)
            .map(|_| {
                let pre = inside4[rng.below(inside4.len() as u64) as usize];
                host_in(u128::from(pre.addr()), pre.len(), 32, &mut rng) as u32
            })
            .collect()
    };
    let inside6: Vec<u128> = if inside6.is_empty() {
        Vec::new()
    } else {
        (0..hosts)
            .map(|_| {
                let pre = inside6[rng.below(inside6.len() as u64) as usize];
                host_in(pre.addr(), pre.len(), 128, &mut rng)
            })
            .collect()
    };
    let mut bytes = pcap_header();
    for i in 0..n {
        let six = (rng.next_u64() as f64 / u64::MAX as f64) < v6_share && !pool6.is_empty();
        let (pool_addr, inside_addr) = if six || pool4.is_empty() {
            let p = pool6[rng.below(pool6.len() as u64) as usize];
            let d = if inside6.is_empty() {
                p
            } else {
                inside6[rng.below(inside6.len() as u64) as usize]
            };
            (A::V6(p), A::V6(d))
        } else {
            let p = pool4[rng.below(pool4.len() as u64) as usize];
            let d = if inside4.is_empty() {
                p
            } else {
                inside4[rng.below(inside4.len() as u64) as usize]
            };
            (A::V4(p), A::V4(d))
        };
        let other = match pool_addr {
            A::V4(_) => A::V4(pool4[rng.below(pool4.len() as u64) as usize]),
            A::V6(_) => A::V6(pool6[rng.below(pool6.len() as u64) as usize]),
        };
        let (src, dst) = match rng.below(8) {
            0 => (inside_addr, pool_addr),
            1 => (pool_addr, other),
            _ => (pool_addr, inside_addr),
        };
        let ts_ns = 1_700_000_000_000_000_000 + (i as u64) * 10_000_000_000 / n.max(1) as u64;
        push_frame(&mut bytes, ts_ns, src, dst);
    }
    let mut rates = Vec::new();
    let mut check = None;
    let mut first = Some(first);
    for pass in 0..passes.max(1) {
        let start = Instant::now();
        let mut cap = Capture::from_bytes(&bytes).map_err(|e| e.to_string())?;
        let mut c = Classifier::new(table, thresholds.clone());
        let counted = if threads > 1 {
            crate::fan::run(&mut c, threads, |f| count_capture(&mut cap, f))?
        } else {
            count_capture(&mut cap, &mut c)
        };
        if let Some(d) = counted? {
            return Err(d.to_string());
        }
        let secs = start.elapsed().as_secs_f64();
        let sums: Vec<u64> = c.totals.dir.iter().map(|f| f.total.packets).collect();
        if pass == 0 {
            check = Some(sums.clone());
            if let Some(first) = first.take() {
                first(&Synthetic {
                    frames: n,
                    bytes: bytes.len(),
                    v6_share,
                    directions: sums,
                    hosts: c.hosts.len(),
                    sources: c.sources_v4.len() + c.sources_v6.len(),
                });
            }
        } else if check.as_ref() != Some(&sums) {
            return Err("passes disagree (a bug)".into());
        }
        rates.push(n as f64 / secs / 1e6);
    }
    Ok(rates)
}

/// A random host inside `addr/len` (family of `bits` bits).
fn host_in(addr: u128, len: u8, bits: u32, rng: &mut Rng) -> u128 {
    let host_bits = bits - u32::from(len);
    let r = rng.next_u128();
    let mask = if host_bits == 0 {
        0
    } else if host_bits >= 128 {
        u128::MAX
    } else {
        (1u128 << host_bits) - 1
    };
    addr | (r & mask)
}

/// Distinct source and destination addresses of a capture's IP packets.
fn capture_addresses(path: &std::path::Path) -> Result<(Vec<u32>, Vec<u128>), String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut cap = Capture::open(std::io::BufReader::new(file))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut v4 = std::collections::BTreeSet::new();
    let mut v6 = std::collections::BTreeSet::new();
    loop {
        match cap.next_frame() {
            Ok(Some(f)) => match decode(f.link, f.data) {
                Ok(Packet::V4 { src, dst, .. }) => {
                    v4.insert(src);
                    v4.insert(dst);
                }
                Ok(Packet::V6 { src, dst, .. }) => {
                    v6.insert(src);
                    v6.insert(dst);
                }
                Err(_) => {}
            },
            Ok(None) | Err(ReadError::Damaged(_)) => break,
            Err(ReadError::Fatal(e)) => return Err(format!("{}: {e}", path.display())),
        }
    }
    Ok((v4.into_iter().collect(), v6.into_iter().collect()))
}

fn pcap_header() -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes()); // nanoseconds
    v.extend_from_slice(&2u16.to_le_bytes());
    v.extend_from_slice(&4u16.to_le_bytes());
    v.extend_from_slice(&[0; 8]);
    v.extend_from_slice(&65535u32.to_le_bytes());
    v.extend_from_slice(&1u32.to_le_bytes());
    v
}

fn push_frame(v: &mut Vec<u8>, ts_ns: u64, src: A, dst: A) {
    const LEN: u32 = 64;
    v.extend_from_slice(&((ts_ns / 1_000_000_000) as u32).to_le_bytes());
    v.extend_from_slice(&((ts_ns % 1_000_000_000) as u32).to_le_bytes());
    v.extend_from_slice(&LEN.to_le_bytes());
    v.extend_from_slice(&LEN.to_le_bytes());
    let start = v.len();
    v.extend_from_slice(&[0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2]);
    match (src, dst) {
        (A::V4(s), A::V4(d)) => {
            v.extend_from_slice(&0x0800u16.to_be_bytes());
            v.extend_from_slice(&[0x45, 0, 0, 50, 0, 0, 0x40, 0, 64, 17, 0, 0]);
            v.extend_from_slice(&s.to_be_bytes());
            v.extend_from_slice(&d.to_be_bytes());
        }
        (A::V6(s), A::V6(d)) => {
            v.extend_from_slice(&0x86ddu16.to_be_bytes());
            v.extend_from_slice(&[0x60, 0, 0, 0, 0, 10, 17, 64]);
            v.extend_from_slice(&s.to_be_bytes());
            v.extend_from_slice(&d.to_be_bytes());
        }
        _ => unreachable!("one family per frame"),
    }
    v.resize(start + LEN as usize, 0);
}
