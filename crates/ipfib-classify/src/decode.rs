//! From a captured frame to the IP addresses FastNetMon's job needs: the
//! link layer (Ethernet with any number of 802.1Q / 802.1ad / QinQ tags,
//! Linux cooked capture v1 and v2, BSD loopback, raw IP) and the IPv4 or
//! IPv6 header. Nothing past the IP header is read.
//!
//! Decisions:
//! - Fragments carry both addresses, so they are counted like any packet
//!   (and tallied as fragments); only their ports would be missing.
//! - An IPv6 packet's addresses are looked up as IPv6, `::ffff:a.b.c.d`
//!   included: that form names IPv4 peers of dual-stack sockets and flow
//!   records, not addresses on the wire (RFC 4291 2.5.5.2), so no unmapping
//!   here, unlike the text inputs.
//! - A frame cut by the snap length inside the link or IP header is
//!   skipped as `truncated`; one whose IP header is whole is counted with
//!   its wire length even if the payload was not captured.

use super::capture::{
    LINK_ETHERNET, LINK_IPV4, LINK_IPV6, LINK_LINUX_SLL, LINK_LINUX_SLL2, LINK_LOOP, LINK_NULL,
    LINK_RAW,
};

/// Why a frame was not counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Skip {
    /// ARP, LLDP, MPLS, anything that is not IPv4 or IPv6.
    NonIp,
    /// Cut short inside the link or IP header.
    Truncated,
    /// An IP header whose version or header length is wrong.
    BadIp,
    /// A link type the decoder does not read.
    UnsupportedLink,
}

impl Skip {
    pub const ALL: [Skip; 4] = [
        Skip::NonIp,
        Skip::Truncated,
        Skip::BadIp,
        Skip::UnsupportedLink,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Skip::NonIp => "non_ip",
            Skip::Truncated => "truncated",
            Skip::BadIp => "bad_ip_header",
            Skip::UnsupportedLink => "unsupported_link",
        }
    }
}

/// A decoded packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packet {
    V4 {
        src: u32,
        dst: u32,
        fragment: bool,
    },
    V6 {
        src: u128,
        dst: u128,
        fragment: bool,
    },
}

const ETH_IPV4: u16 = 0x0800;
const ETH_IPV6: u16 = 0x86dd;

#[inline]
fn be16(d: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*d.get(at)?, *d.get(at + 1)?]))
}

/// Decode one frame of link type `link`.
#[inline]
pub fn decode(link: u16, data: &[u8]) -> Result<Packet, Skip> {
    match link {
        LINK_ETHERNET => {
            let mut at = 12;
            let mut ethertype = be16(data, at).ok_or(Skip::Truncated)?;
            // 802.1Q, 802.1ad and the pre-standard 0x9100 QinQ tag, stacked.
            while matches!(ethertype, 0x8100 | 0x88a8 | 0x9100) {
                at += 4;
                ethertype = be16(data, at).ok_or(Skip::Truncated)?;
            }
            by_ethertype(ethertype, data.get(at + 2..).unwrap_or(&[]))
        }
        LINK_LINUX_SLL => {
            let proto = be16(data, 14).ok_or(Skip::Truncated)?;
            by_ethertype(proto, data.get(16..).unwrap_or(&[]))
        }
        LINK_LINUX_SLL2 => {
            let proto = be16(data, 0).ok_or(Skip::Truncated)?;
            if data.len() < 20 {
                return Err(Skip::Truncated);
            }
            by_ethertype(proto, &data[20..])
        }
        // RAW, and the values OpenBSD and others write for it.
        LINK_RAW | 12 | 14 => match data.first().map(|b| b >> 4) {
            Some(4) => ipv4(data),
            Some(6) => ipv6(data),
            Some(_) => Err(Skip::NonIp),
            None => Err(Skip::Truncated),
        },
        LINK_IPV4 => ipv4(data),
        LINK_IPV6 => ipv6(data),
        LINK_NULL | LINK_LOOP => {
            // A 4-byte address family, host order (NULL) or network order
            // (LOOP): read both ways. AF_INET is 2 everywhere; AF_INET6 is
            // 10 (Linux), 24 (NetBSD, OpenBSD), 28 (FreeBSD), 30 (macOS).
            let h = data.get(..4).ok_or(Skip::Truncated)?;
            let fam = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
            let fam = if fam > 0xffff { fam.swap_bytes() } else { fam };
            match fam {
                2 => ipv4(&data[4..]),
                10 | 24 | 28 | 30 => ipv6(&data[4..]),
                _ => Err(Skip::NonIp),
            }
        }
        _ => Err(Skip::UnsupportedLink),
    }
}

#[inline]
fn by_ethertype(ethertype: u16, ip: &[u8]) -> Result<Packet, Skip> {
    match ethertype {
        ETH_IPV4 => ipv4(ip),
        ETH_IPV6 => ipv6(ip),
        _ => Err(Skip::NonIp),
    }
}

#[inline]
fn ipv4(d: &[u8]) -> Result<Packet, Skip> {
    let Some(h) = d.get(..20) else {
        return Err(Skip::Truncated);
    };
    if h[0] >> 4 != 4 || h[0] & 0x0f < 5 {
        return Err(Skip::BadIp);
    }
    let flags_frag = u16::from_be_bytes([h[6], h[7]]);
    Ok(Packet::V4 {
        src: u32::from_be_bytes([h[12], h[13], h[14], h[15]]),
        dst: u32::from_be_bytes([h[16], h[17], h[18], h[19]]),
        // More fragments, or an offset: any fragment but an unfragmented packet.
        fragment: flags_frag & 0x3fff != 0,
    })
}

#[inline]
fn ipv6(d: &[u8]) -> Result<Packet, Skip> {
    let Some(h) = d.get(..40) else {
        return Err(Skip::Truncated);
    };
    if h[0] >> 4 != 6 {
        return Err(Skip::BadIp);
    }
    let mut a = [0u8; 16];
    a.copy_from_slice(&h[8..24]);
    let src = u128::from_be_bytes(a);
    a.copy_from_slice(&h[24..40]);
    let dst = u128::from_be_bytes(a);
    // Walk the extension headers that may come before a fragment header
    // (hop-by-hop 0, routing 43, destination options 60), at most a few.
    let mut next = h[6];
    let mut at = 40;
    let mut fragment = false;
    for _ in 0..8 {
        match next {
            44 => {
                fragment = true;
                break;
            }
            0 | 43 | 60 => {
                let (Some(&n), Some(&l)) = (d.get(at), d.get(at + 1)) else {
                    break; // not captured: counted, not known to be a fragment
                };
                next = n;
                at += 8 + 8 * usize::from(l);
            }
            _ => break,
        }
    }
    Ok(Packet::V6 { src, dst, fragment })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eth(tags: &[u16], ethertype: u16, ip: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        for t in tags {
            f.extend_from_slice(&t.to_be_bytes());
            f.extend_from_slice(&[0, 7]);
        }
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(ip);
        f
    }

    fn v4(src: u32, dst: u32, frag: u16) -> Vec<u8> {
        let mut h = vec![0x45, 0, 0, 40, 0, 0];
        h.extend_from_slice(&frag.to_be_bytes());
        h.extend_from_slice(&[64, 6, 0, 0]);
        h.extend_from_slice(&src.to_be_bytes());
        h.extend_from_slice(&dst.to_be_bytes());
        h.extend_from_slice(&[0; 20]);
        h
    }

    fn v6(src: u128, dst: u128, next: u8, ext: &[u8]) -> Vec<u8> {
        let mut h = vec![0x60, 0, 0, 0, 0, ext.len() as u8, next, 64];
        h.extend_from_slice(&src.to_be_bytes());
        h.extend_from_slice(&dst.to_be_bytes());
        h.extend_from_slice(ext);
        h
    }

    #[test]
    fn link_layers() {
        let p4 = v4(0x0a000001, 0xc0a80001, 0);
        let want4 = Ok(Packet::V4 {
            src: 0x0a000001,
            dst: 0xc0a80001,
            fragment: false,
        });
        assert_eq!(decode(LINK_ETHERNET, &eth(&[], 0x0800, &p4)), want4);
        assert_eq!(decode(LINK_ETHERNET, &eth(&[0x8100], 0x0800, &p4)), want4);
        assert_eq!(
            decode(LINK_ETHERNET, &eth(&[0x88a8, 0x8100], 0x0800, &p4)),
            want4
        );
        assert_eq!(decode(LINK_RAW, &p4), want4);
        assert_eq!(decode(LINK_IPV4, &p4), want4);
        let mut sll = vec![0u8; 14];
        sll.extend_from_slice(&0x0800u16.to_be_bytes());
        sll.extend_from_slice(&p4);
        assert_eq!(decode(LINK_LINUX_SLL, &sll), want4);
        let mut sll2 = 0x0800u16.to_be_bytes().to_vec();
        sll2.extend_from_slice(&[0; 18]);
        sll2.extend_from_slice(&p4);
        assert_eq!(decode(LINK_LINUX_SLL2, &sll2), want4);
        let mut null = 2u32.to_le_bytes().to_vec();
        null.extend_from_slice(&p4);
        assert_eq!(decode(LINK_NULL, &null), want4);
        let mut lo = 30u32.to_be_bytes().to_vec();
        lo.extend_from_slice(&v6(1, 2, 6, &[]));
        assert_eq!(
            decode(LINK_LOOP, &lo),
            Ok(Packet::V6 {
                src: 1,
                dst: 2,
                fragment: false
            })
        );
        assert_eq!(
            decode(LINK_ETHERNET, &eth(&[], 0x0806, &[0; 28])),
            Err(Skip::NonIp)
        );
        assert_eq!(
            decode(LINK_ETHERNET, &eth(&[0x8100], 0x0800, &p4[..19])),
            Err(Skip::Truncated)
        );
        assert_eq!(decode(LINK_ETHERNET, &[0; 13]), Err(Skip::Truncated));
        assert_eq!(
            decode(LINK_ETHERNET, &eth(&[], 0x0800, &v6(1, 2, 6, &[]))),
            Err(Skip::BadIp)
        );
        assert_eq!(decode(147, &p4), Err(Skip::UnsupportedLink));
    }

    #[test]
    fn fragments() {
        for (frag, want) in [
            (0x4000u16, false),
            (0x2000, true),
            (0x0010, true),
            (0, false),
        ] {
            assert_eq!(
                decode(LINK_RAW, &v4(1, 2, frag)),
                Ok(Packet::V4 {
                    src: 1,
                    dst: 2,
                    fragment: want
                })
            );
        }
        // Hop-by-hop (8 bytes) then a fragment header.
        let ext = [44, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 1, 0, 0, 0, 9];
        assert_eq!(
            decode(LINK_RAW, &v6(5, 6, 0, &ext)),
            Ok(Packet::V6 {
                src: 5,
                dst: 6,
                fragment: true
            })
        );
        assert_eq!(
            decode(LINK_RAW, &v6(5, 6, 44, &[])),
            Ok(Packet::V6 {
                src: 5,
                dst: 6,
                fragment: true
            })
        );
    }

    /// Differential against etherparse (an independent decoder) on random
    /// frames rich in the cases that matter: tags, truncation, versions,
    /// fragments, extension headers.
    #[test]
    fn agrees_with_etherparse() {
        use etherparse::{LaxNetSlice, LaxSlicedPacket};
        let mut rng = ipfib::gen::Rng::new(11);
        let mut seen = [0usize; 3];
        for i in 0..200_000 {
            let tags: Vec<u16> = (0..rng.below(3))
                .map(|_| [0x8100, 0x88a8][rng.below(2) as usize])
                .collect();
            let frag = [0u16, 0x4000, 0x2000, 0x0100][rng.below(4) as usize];
            let ip = match rng.below(4) {
                0 => v4(rng.next_u64() as u32, rng.next_u64() as u32, frag),
                1 => v6(rng.next_u128(), rng.next_u128(), 6, &[0; 20]),
                2 => v6(
                    rng.next_u128(),
                    rng.next_u128(),
                    44,
                    &[6, 0, 0, 1, 0, 0, 0, 9],
                ),
                _ => v6(
                    rng.next_u128(),
                    rng.next_u128(),
                    60,
                    &[44, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 1, 0, 0, 0, 9],
                ),
            };
            let mut frame = eth(&tags, if ip[0] >> 4 == 4 { 0x0800 } else { 0x86dd }, &ip);
            if i % 5 == 0 {
                frame.truncate(rng.below(frame.len() as u64) as usize);
            }
            let ours = decode(LINK_ETHERNET, &frame);
            let theirs = LaxSlicedPacket::from_ethernet(&frame)
                .ok()
                .and_then(|p| match p.net {
                    Some(LaxNetSlice::Ipv4(s)) if s.header().slice().len() >= 20 => {
                        let h = s.header();
                        Some(Packet::V4 {
                            src: u32::from(h.source_addr()),
                            dst: u32::from(h.destination_addr()),
                            fragment: h.is_fragmenting_payload(),
                        })
                    }
                    Some(LaxNetSlice::Ipv6(s)) => {
                        let h = s.header();
                        Some(Packet::V6 {
                            src: u128::from(h.source_addr()),
                            dst: u128::from(h.destination_addr()),
                            fragment: s.extensions().is_fragmenting_payload()
                                || s.extensions().first_header() == Some(etherparse::IpNumber(44)),
                        })
                    }
                    _ => None,
                });
            match (ours, theirs) {
                (Ok(a), Some(b)) => {
                    seen[0] += 1;
                    // etherparse stops at an extension header it cannot read
                    // whole; compare addresses always, fragments when whole.
                    match (a, b) {
                        (Packet::V4 { .. }, _) => assert_eq!(a, b, "frame {frame:02x?}"),
                        (
                            Packet::V6 { src, dst, .. },
                            Packet::V6 {
                                src: s2, dst: d2, ..
                            },
                        ) => {
                            assert_eq!((src, dst), (s2, d2));
                            if i % 5 != 0 {
                                assert_eq!(a, b, "frame {frame:02x?}");
                            }
                        }
                        _ => panic!("family differs: {a:?} {b:?}"),
                    }
                }
                (Err(_), None) => seen[1] += 1,
                (a, b) => panic!("ours {a:?} theirs {b:?} frame {frame:02x?}"),
            }
            let _ = &mut seen[2];
        }
        assert!(seen[0] > 100_000 && seen[1] > 10_000, "{seen:?}");
    }
}
