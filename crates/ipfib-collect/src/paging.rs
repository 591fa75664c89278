//! Pages of `/api/v1/routes` and `/api/v1/peers`: `limit` (default 1000,
//! at most 10000) and `cursor` (the previous answer's `next_cursor`, an
//! opaque token, absent on the last page).
//!
//! A routes cursor names where the next page starts: a prefix and how
//! many of its routes were already given. Prefixes come in prefix order
//! (address, then length), each prefix's routes in the RIB's preference
//! order; a page ends after `limit` routes or after visiting
//! [`MAX_VISITS`] prefixes (so that prefixes left empty by downed peers
//! cannot make one page scan the whole RIB). Pages of a RIB that does not
//! change list every route exactly once; when it changes between pages, a
//! route of the prefix the page boundary fell in may be repeated or missed,
//! and prefixes are listed as of the page that reached them.

use ipfib::prefix::{AnyPrefix, Prefix};
use ipfib_rib::{Match, Rib, Route};

pub const DEFAULT_LIMIT: usize = 1000;
pub const MAX_LIMIT: usize = 10_000;
/// Prefixes one page may visit (with or without live routes).
pub const MAX_VISITS: usize = 4 * MAX_LIMIT;

/// [`MAX_VISITS`] for a page with an RPKI filter (`rov=`, `aspa=`), whose
/// every route's statuses are computed: about 50K statuses (50 ms) at 20
/// routes a prefix.
pub const MAX_VISITS_FILTERED: usize = MAX_VISITS / 16;

/// `limit=`: absent 1000; larger than 10000 is 10000; 0 or not a number
/// is an error.
pub fn parse_limit(v: Option<&str>) -> Result<usize, String> {
    match v {
        None => Ok(DEFAULT_LIMIT),
        Some(t) => match t.parse::<u64>() {
            Ok(0) => Err("limit must be at least 1".into()),
            Ok(n) => Ok(n.min(MAX_LIMIT as u64) as usize),
            Err(_) => Err(format!("limit {t:?} is not a number")),
        },
    }
}

/// Where a routes page starts: `skip` routes of `prefix` were given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub prefix: AnyPrefix,
    pub skip: u32,
}

impl Cursor {
    /// `4-0a000000-8-0` / `6-<32 hex digits>-32-5`: URL-safe as it is.
    pub fn encode(&self) -> String {
        match self.prefix {
            AnyPrefix::V4(p) => format!("4-{:08x}-{}-{}", p.addr(), p.len(), self.skip),
            AnyPrefix::V6(p) => format!("6-{:032x}-{}-{}", p.addr(), p.len(), self.skip),
        }
    }

    pub fn decode(text: &str) -> Result<Cursor, String> {
        let bad = || format!("cursor {text:?} is not one this server gave");
        let mut parts = text.split('-');
        let (Some(fam), Some(addr), Some(len), Some(skip), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(bad());
        };
        let len: u8 = len.parse().map_err(|_| bad())?;
        let skip: u32 = skip.parse().map_err(|_| bad())?;
        let prefix = match fam {
            "4" if addr.len() == 8 => {
                let a = u32::from_str_radix(addr, 16).map_err(|_| bad())?;
                AnyPrefix::V4(Prefix::new(a, len).map_err(|_| bad())?)
            }
            "6" if addr.len() == 32 => {
                let a = u128::from_str_radix(addr, 16).map_err(|_| bad())?;
                AnyPrefix::V6(Prefix::new(a, len).map_err(|_| bad())?)
            }
            _ => return Err(bad()),
        };
        Ok(Cursor { prefix, skip })
    }
}

pub fn covers(outer: &AnyPrefix, inner: &AnyPrefix) -> bool {
    match (outer, inner) {
        (AnyPrefix::V4(o), AnyPrefix::V4(i)) => o.covers(i),
        (AnyPrefix::V6(o), AnyPrefix::V6(i)) => o.covers(i),
        _ => false,
    }
}

/// Whether `c` can belong to a `(query, m)` listing.
pub fn cursor_fits(c: &Cursor, query: &AnyPrefix, m: Match) -> bool {
    match m {
        Match::Exact => c.prefix == *query,
        Match::Longer => covers(query, &c.prefix),
        Match::Shorter => covers(&c.prefix, query),
    }
}

/// The prefixes of a listing strictly after `after`, in order, at most
/// `max` (`longer`: an ordered walk of the covered subtree).
pub fn prefixes_after(
    rib: &Rib,
    query: &AnyPrefix,
    m: Match,
    after: Option<&AnyPrefix>,
    max: usize,
) -> Vec<AnyPrefix> {
    match m {
        Match::Longer => rib.prefixes_under(query, after, max),
        Match::Exact => match after {
            Some(a) if a >= query => Vec::new(),
            _ => vec![*query],
        },
        // Every shorter prefix of the query, shortest (= first in prefix
        // order) first; those without routes give none.
        Match::Shorter => (0..=query.len())
            .map(|l| truncate(query, l))
            .filter(|p| after.is_none_or(|a| p > a))
            .take(max)
            .collect(),
    }
}

fn truncate(p: &AnyPrefix, len: u8) -> AnyPrefix {
    match p {
        AnyPrefix::V4(p) => AnyPrefix::V4(p.truncate(len)),
        AnyPrefix::V6(p) => AnyPrefix::V6(p.truncate(len)),
    }
}

/// One page: at most `limit` routes from `cursor` on, and where the next
/// page starts (`None`: this was the last).
pub fn routes_page(
    rib: &Rib,
    query: &AnyPrefix,
    m: Match,
    limit: usize,
    cursor: Option<Cursor>,
    routes_of: &dyn Fn(&AnyPrefix) -> Vec<Route>,
    max_visits: usize,
) -> (Vec<Route>, Option<Cursor>) {
    let limit = limit.clamp(1, MAX_LIMIT);
    let mut out: Vec<Route> = Vec::with_capacity(limit.min(1024));
    let mut after = None;
    if let Some(c) = cursor {
        let mut rs = routes_of(&c.prefix);
        let skip = (c.skip as usize).min(rs.len());
        rs.drain(..skip);
        if rs.len() > limit {
            rs.truncate(limit);
            let skip = c.skip.saturating_add(limit as u32);
            return (rs, Some(Cursor { skip, ..c }));
        }
        out.extend(rs);
        after = Some(c.prefix);
    }
    let mut visits = 0;
    loop {
        let batch = prefixes_after(rib, query, m, after.as_ref(), 256);
        let Some(&last) = batch.last() else {
            return (out, None);
        };
        for p in batch {
            visits += 1;
            let mut rs = routes_of(&p);
            if !rs.is_empty() {
                if out.len() == limit {
                    // A full page and more to come.
                    return (out, Some(Cursor { prefix: p, skip: 0 }));
                }
                let room = limit - out.len();
                if rs.len() > room {
                    rs.truncate(room);
                    out.extend(rs);
                    let skip = room as u32;
                    return (out, Some(Cursor { prefix: p, skip }));
                }
                out.extend(rs);
            }
            if visits >= max_visits.max(1) {
                // Resume right after this prefix.
                let skip = u32::MAX;
                return (out, Some(Cursor { prefix: p, skip }));
            }
        }
        after = Some(last);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipfib_rib::attrs::AttrsRef;
    use ipfib_rib::{Origin, PeerKey, RibKind};

    #[test]
    fn limits() {
        assert_eq!(parse_limit(None), Ok(1000));
        assert_eq!(parse_limit(Some("5")), Ok(5));
        assert_eq!(parse_limit(Some("10000")), Ok(10_000));
        assert_eq!(parse_limit(Some("1000000")), Ok(10_000));
        assert!(parse_limit(Some("99999999999999999999")).is_err());
        assert!(parse_limit(Some("0")).is_err());
        assert!(parse_limit(Some("-1")).is_err());
        assert!(parse_limit(Some("x")).is_err());
    }

    #[test]
    fn cursors_round_trip_and_reject_forgeries() {
        for (p, skip) in [
            ("10.1.0.0/16", 0),
            ("0.0.0.0/0", 7),
            ("255.255.255.255/32", u32::MAX),
            ("2001:db8::/32", 3),
            ("::/0", 0),
            ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", 1),
        ] {
            let c = Cursor {
                prefix: p.parse().unwrap(),
                skip,
            };
            let t = c.encode();
            assert!(t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
            assert_eq!(Cursor::decode(&t), Ok(c), "{t}");
        }
        for bad in [
            "",
            "4-0a000000-8",
            "4-0a000000-8-0-1",
            "4-0a010000-8-0",  // host bits
            "4-0a000000-33-0", // length
            "4-0a00000-8-0",   // short address
            "5-0a000000-8-0",
            "4-0a000000-8--1",
            "4-0a000000-8-4294967296",
            "6-0a000000-8-0",
            "4-zz000000-8-0",
        ] {
            assert!(Cursor::decode(bad).is_err(), "{bad}");
        }
    }

    fn rib_with(prefixes: &[(&str, usize)]) -> Rib {
        let rib = Rib::new();
        let peers: Vec<_> = (0..4)
            .map(|i| {
                let key = PeerKey {
                    peer_type: 0,
                    distinguisher: 0,
                    address: format!("192.0.2.{}", i + 1).parse().unwrap(),
                    asn: 64500 + i,
                    bgp_id: i + 1,
                    rib: RibKind::PrePolicy,
                };
                rib.add_peer(1, key).unwrap()
            })
            .collect();
        let attrs = rib.intern(&AttrsRef {
            as_path: &[],
            communities: &[],
            large_communities: &[],
            next_hop: Some("192.0.2.1".parse().unwrap()),
            origin: Origin::Igp,
            med: None,
            local_pref: None,
        });
        for &(p, n) in prefixes {
            for peer in &peers[..n] {
                rib.announce(peer, p.parse().unwrap(), 0, &attrs).unwrap();
            }
        }
        rib.sync();
        rib
    }

    /// Pages walk every route of the brute-force answer exactly once, in
    /// the same order, whatever the page size.
    #[test]
    fn pages_equal_the_unpaginated_answer() {
        let mut prefixes = Vec::new();
        let mut x: u32 = 12345;
        let mut texts = Vec::new();
        for i in 0..400u32 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let len = 8 + ((x >> 27) % 25) as u8;
            let base = if i % 2 == 0 {
                0x0a00_0000 | (x & 0xffffff)
            } else {
                x
            };
            let p = Prefix::new_masked(base, len).unwrap();
            texts.push((AnyPrefix::V4(p).to_string(), 1 + (i as usize % 4)));
        }
        for (t, n) in &texts {
            prefixes.push((t.as_str(), *n));
        }
        prefixes.push(("10.0.0.0/8", 3));
        let rib = rib_with(&prefixes);
        let live = |p: &AnyPrefix| rib.routes(p);
        for (q, m) in [
            ("0.0.0.0/0", Match::Longer),
            ("10.0.0.0/8", Match::Longer),
            ("10.128.0.0/9", Match::Longer),
            ("10.0.0.0/8", Match::Exact),
            ("10.1.2.0/24", Match::Shorter),
        ] {
            let q: AnyPrefix = q.parse().unwrap();
            let want: Vec<(AnyPrefix, u32)> = rib
                .routes_matching(&q, m, usize::MAX)
                .iter()
                .map(|r| (r.prefix, r.peer.id))
                .collect();
            assert!(!want.is_empty());
            for limit in [1, 2, 3, 5, 64, 1000] {
                let mut got = Vec::new();
                let mut cursor = None;
                for _ in 0..=want.len() + 1 {
                    let (page, next) = routes_page(&rib, &q, m, limit, cursor, &live, MAX_VISITS);
                    assert!(page.len() <= limit);
                    got.extend(page.iter().map(|r| (r.prefix, r.peer.id)));
                    if let Some(c) = next {
                        assert!(cursor_fits(&c, &q, m));
                        let c = Cursor::decode(&c.encode()).unwrap();
                        cursor = Some(c);
                    } else {
                        cursor = None;
                        break;
                    }
                }
                assert!(cursor.is_none(), "pages did not end");
                assert_eq!(got, want, "{q} {m:?} limit {limit}");
            }
        }
    }
}
