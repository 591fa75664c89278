//! NLRI: unicast, labeled unicast and VPN prefixes, with ADD-PATH path
//! identifiers.

use ipfib::prefix::{AnyPrefix, Prefix};

use super::cursor::{Cur, WireError};

/// How the NLRI of a family are encoded.
#[derive(Clone, Copy)]
pub(super) struct NlriKind {
    pub(super) afi: u16,
    pub(super) addpath: bool,
    /// A label stack precedes the prefix (SAFI 4 and 128).
    pub(super) labeled: bool,
    /// A route distinguisher follows the labels (SAFI 128).
    pub(super) vpn: bool,
    /// In MP_UNREACH: one 3-byte label field, whatever its bottom-of-stack
    /// bit (RFC 8277 §2.4).
    pub(super) withdraw: bool,
}

/// Read NLRI (RFC 4271 §4.3, RFC 7911 §3, RFC 8277 §2, RFC 4364 §4.3.4)
/// into `push(rd, prefix, path id)`.
pub(super) fn nlri_with(
    mut c: Cur<'_>,
    k: NlriKind,
    mut push: impl FnMut(u64, AnyPrefix, u32),
) -> Result<(), WireError> {
    while c.left() > 0 {
        let path_id = if k.addpath {
            c.u32("path identifier")?
        } else {
            0
        };
        let at = c.at;
        let mut bits = c.u8("prefix length")? as usize;
        if k.labeled {
            loop {
                if bits < 24 {
                    return Err(WireError::Malformed {
                        at,
                        what: format!("prefix length {bits} leaves no room for a label"),
                    });
                }
                let [_, _, bottom] = c.array::<3>("label")?;
                bits -= 24;
                if k.withdraw || bottom & 1 != 0 {
                    break;
                }
            }
        }
        let mut rd = 0;
        if k.vpn {
            if bits < 64 {
                return Err(WireError::Malformed {
                    at,
                    what: format!("prefix length {bits} leaves no room for a route distinguisher"),
                });
            }
            rd = u64::from_be_bytes(c.array("route distinguisher")?);
            bits -= 64;
        }
        let prefix = prefix_bits(&mut c, k.afi != 1, bits, at)?;
        push(rd, prefix, path_id);
    }
    Ok(())
}

/// Read unicast NLRI of `afi` into `out`.
pub(super) fn nlri(
    c: Cur<'_>,
    afi: u16,
    addpath: bool,
    out: &mut Vec<(AnyPrefix, u32)>,
) -> Result<(), WireError> {
    let k = NlriKind {
        afi,
        addpath,
        labeled: false,
        vpn: false,
        withdraw: false,
    };
    nlri_with(c, k, |_, p, id| out.push((p, id)))
}

/// The prefix of `bits` bits whose bytes come next in `c` (the length
/// was read at `at`); host bits past the length are masked, as RFC 4271
/// §4.3 makes them irrelevant.
pub(super) fn prefix_bits(
    c: &mut Cur<'_>,
    v6: bool,
    bits: usize,
    at: usize,
) -> Result<AnyPrefix, WireError> {
    let max = if v6 { 128 } else { 32 };
    if bits > max {
        return Err(WireError::Malformed {
            at,
            what: format!("prefix length {bits} > {max}"),
        });
    }
    let len = bits as u8;
    let bytes = c.take(bits.div_ceil(8), "prefix")?;
    let prefix = if v6 {
        let mut a = [0u8; 16];
        a.iter_mut().zip(bytes).for_each(|(d, s)| *d = *s);
        Prefix::new_masked(u128::from_be_bytes(a), len).map(AnyPrefix::V6)
    } else {
        let mut a = [0u8; 4];
        a.iter_mut().zip(bytes).for_each(|(d, s)| *d = *s);
        Prefix::new_masked(u32::from_be_bytes(a), len).map(AnyPrefix::V4)
    };
    prefix.map_err(|e| WireError::Malformed {
        at,
        what: e.to_string(),
    })
}
