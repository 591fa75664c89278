//! OPEN capabilities (RFC 5492; RFC 9072 extended optional parameters)
//! that decide how a session's UPDATEs are encoded.

use super::cursor::{bgp_message, WireError, OPEN};

/// Capabilities of one OPEN that decide how UPDATEs are encoded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpenCaps {
    pub asn: u32,
    pub bgp_id: u32,
    pub four_octet: bool,
    /// (AFI, SAFI, send/receive bits: 1 receive, 2 send) per RFC 7911.
    pub addpath: Vec<(u16, u8, u8)>,
    /// Multiprotocol capabilities (RFC 4760 §8): (AFI, SAFI).
    pub families: Vec<(u16, u8)>,
}

impl OpenCaps {
    /// Whether the OPEN carries an ADD-PATH entry for `afi` unicast with
    /// any valid send/receive value (1-3; RFC 7911 defines no 0).
    pub fn has_addpath(&self, afi: u16) -> bool {
        self.addpath
            .iter()
            .any(|&(a, s, d)| a == afi && s == 1 && d != 0)
    }

    /// As [`OpenCaps::has_addpath`], for any SAFI.
    pub fn has_addpath_safi(&self, afi: u16, safi: u8) -> bool {
        self.addpath
            .iter()
            .any(|&(a, s, d)| a == afi && s == safi && d != 0)
    }

    fn addpath_bits(&self, afi: u16, safi: u8) -> u8 {
        self.addpath
            .iter()
            .filter(|&&(a, s, _)| a == afi && s == safi)
            .fold(0, |acc, &(_, _, b)| acc | b)
    }

    /// The address families this OPEN is about: its multiprotocol
    /// capabilities, or IPv4 unicast without any (RFC 4760 §8), plus
    /// every family it has an ADD-PATH entry for.
    pub fn families(&self) -> Vec<(u16, u8)> {
        let mut f = self.families.clone();
        if f.is_empty() {
            f.push((1, 1));
        }
        f.extend(self.addpath.iter().map(|&(a, s, _)| (a, s)));
        f.sort_unstable();
        f.dedup();
        f
    }
}

/// Decode a BGP OPEN (whole message, header included).
pub fn decode_open(buf: &[u8]) -> Result<OpenCaps, WireError> {
    let (kind, mut c, _) = bgp_message(buf)?;
    if kind != OPEN {
        return Err(c.bad(format!("expected an OPEN (type 1), got type {kind}")));
    }
    let version = c.u8("OPEN version")?;
    if version != 4 {
        return Err(c.bad(format!("BGP version {version}, expected 4")));
    }
    let mut caps = OpenCaps {
        asn: c.u16("OPEN my AS")? as u32,
        ..OpenCaps::default()
    };
    c.u16("OPEN hold time")?;
    caps.bgp_id = c.u32("OPEN BGP identifier")?;
    let short_len = c.u8("OPEN optional parameters length")? as usize;
    // RFC 9072: a length of 255 followed by type 255 means extended
    // (two-byte) lengths.
    let extended = short_len == 255 && c.buf.first() == Some(&255);
    let mut params = if extended {
        c.u8("extended parameters marker")?;
        let n = c.u16("extended parameters length")? as usize;
        c.sub(n, "optional parameters")?
    } else {
        c.sub(short_len, "optional parameters")?
    };
    // RFC 4271 §4.2: the optional parameters end the OPEN; bytes after
    // them mean its length lies (in a BMP Peer Up, it would shift the
    // next OPEN or swallow the TLVs).
    if c.left() != 0 {
        return Err(c.bad(format!("{} bytes after the optional parameters", c.left())));
    }
    while params.left() > 0 {
        let ptype = params.u8("parameter type")?;
        let plen = if extended {
            params.u16("parameter length")? as usize
        } else {
            params.u8("parameter length")? as usize
        };
        let mut p = params.sub(plen, "parameter value")?;
        if ptype != 2 {
            continue;
        }
        while p.left() > 0 {
            let code = p.u8("capability code")?;
            let clen = p.u8("capability length")? as usize;
            let mut v = p.sub(clen, "capability value")?;
            match code {
                1 if clen == 4 => {
                    let afi = v.u16("multiprotocol AFI")?;
                    v.u8("multiprotocol reserved")?;
                    let safi = v.u8("multiprotocol SAFI")?;
                    caps.families.push((afi, safi));
                }
                65 => {
                    caps.four_octet = true;
                    caps.asn = v.u32("4-octet AS capability")?;
                }
                69 => {
                    while v.left() > 0 {
                        let afi = v.u16("ADD-PATH AFI")?;
                        let safi = v.u8("ADD-PATH SAFI")?;
                        let dir = v.u8("ADD-PATH send/receive")?;
                        caps.addpath.push((afi, safi, dir & 3));
                    }
                }
                _ => {}
            }
        }
    }
    Ok(caps)
}

/// Whether routes in UPDATEs that `sender` sent to `receiver` carry path
/// identifiers for `afi` unicast: the sender may send and the receiver may
/// receive (RFC 7911 §4).
pub fn addpath_negotiated(sender: &OpenCaps, receiver: &OpenCaps, afi: u16) -> bool {
    addpath_negotiated_safi(sender, receiver, afi, 1)
}

/// As [`addpath_negotiated`], for any SAFI.
pub fn addpath_negotiated_safi(sender: &OpenCaps, receiver: &OpenCaps, afi: u16, safi: u8) -> bool {
    sender.addpath_bits(afi, safi) & 2 != 0 && receiver.addpath_bits(afi, safi) & 1 != 0
}
