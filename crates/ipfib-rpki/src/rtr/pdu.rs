//! RTR PDUs (RFC 6810 version 0, RFC 8210 version 1, and version 2 of
//! draft-ietf-sidrops-8210bis with its ASPA PDU), decoded from and encoded
//! to bytes.
//!
//! Every length read from the wire is checked against the PDU type's
//! fixed size or [`MAX_PDU`] before anything is allocated, and every field
//! is checked (prefix lengths, max lengths, host bits) so a decoded PDU is
//! always one a VRP set can take.

use std::net::{Ipv4Addr, Ipv6Addr};

use ipfib::prefix::{AnyPrefix, HostBits};

/// The largest PDU accepted: an ASPA with 16,380 providers (the draft's
/// limit) or an Error Report with a few kilobytes of text fit well under it.
pub const MAX_PDU: u32 = 1 << 17;

pub const SERIAL_NOTIFY: u8 = 0;
pub const SERIAL_QUERY: u8 = 1;
pub const RESET_QUERY: u8 = 2;
pub const CACHE_RESPONSE: u8 = 3;
pub const IPV4_PREFIX: u8 = 4;
pub const IPV6_PREFIX: u8 = 6;
pub const END_OF_DATA: u8 = 7;
pub const CACHE_RESET: u8 = 8;
pub const ROUTER_KEY: u8 = 9;
pub const ERROR_REPORT: u8 = 10;
pub const ASPA: u8 = 11;

/// Error Report codes (RFC 8210 §12).
pub mod code {
    pub const CORRUPT_DATA: u16 = 0;
    pub const INTERNAL_ERROR: u16 = 1;
    pub const NO_DATA_AVAILABLE: u16 = 2;
    pub const INVALID_REQUEST: u16 = 3;
    pub const UNSUPPORTED_VERSION: u16 = 4;
    pub const UNSUPPORTED_PDU_TYPE: u16 = 5;
    pub const WITHDRAWAL_OF_UNKNOWN: u16 = 6;
    pub const DUPLICATE_ANNOUNCEMENT: u16 = 7;
    pub const UNEXPECTED_VERSION: u16 = 8;
    pub const ASPA_PROVIDER_LIST_ERROR: u16 = 9;
}

/// The three timers an End of Data carries from version 1 on, seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timers {
    pub refresh: u32,
    pub retry: u32,
    pub expire: u32,
}

/// One RTR PDU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pdu {
    SerialNotify {
        version: u8,
        session: u16,
        serial: u32,
    },
    SerialQuery {
        version: u8,
        session: u16,
        serial: u32,
    },
    ResetQuery {
        version: u8,
    },
    CacheResponse {
        version: u8,
        session: u16,
    },
    /// An IPv4 or IPv6 Prefix PDU.
    Prefix {
        version: u8,
        announce: bool,
        prefix: AnyPrefix,
        max_len: u8,
        asn: u32,
    },
    EndOfData {
        version: u8,
        session: u16,
        serial: u32,
        /// Absent in version 0.
        timers: Option<Timers>,
    },
    CacheReset {
        version: u8,
    },
    /// A Router Key PDU (BGPsec): checked for size, not kept.
    RouterKey {
        version: u8,
    },
    ErrorReport {
        version: u8,
        code: u16,
        /// The PDU in error, as sent (possibly empty).
        pdu: Vec<u8>,
        text: String,
    },
    Aspa {
        version: u8,
        announce: bool,
        customer: u32,
        providers: Vec<u32>,
    },
}

/// Why bytes are not a PDU: the Error Report code to answer with and a
/// description.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{what} (RTR error code {code})")]
pub struct PduError {
    pub code: u16,
    pub what: String,
}

fn corrupt(what: impl Into<String>) -> PduError {
    PduError {
        code: code::CORRUPT_DATA,
        what: what.into(),
    }
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

impl Pdu {
    /// The PDU's version field.
    pub fn version(&self) -> u8 {
        match *self {
            Pdu::SerialNotify { version, .. }
            | Pdu::SerialQuery { version, .. }
            | Pdu::ResetQuery { version }
            | Pdu::CacheResponse { version, .. }
            | Pdu::Prefix { version, .. }
            | Pdu::EndOfData { version, .. }
            | Pdu::CacheReset { version }
            | Pdu::RouterKey { version }
            | Pdu::ErrorReport { version, .. }
            | Pdu::Aspa { version, .. } => version,
        }
    }

    /// The length a header announces, once 8 bytes are there: `Ok(None)`
    /// while fewer are, an error for a length under 8 or over [`MAX_PDU`].
    pub fn frame_len(buf: &[u8]) -> Result<Option<usize>, PduError> {
        if buf.len() < 8 {
            return Ok(None);
        }
        let len = be32(buf, 4);
        if len < 8 {
            return Err(corrupt(format!(
                "PDU length {len} is under the 8-byte header"
            )));
        }
        if len > MAX_PDU {
            return Err(corrupt(format!(
                "PDU length {len} is over the {MAX_PDU}-byte limit"
            )));
        }
        Ok(Some(len as usize))
    }

    /// Decodes one PDU from the front of `buf`: `Ok(None)` when more bytes
    /// are needed, else the PDU and the bytes it took.
    pub fn decode(buf: &[u8]) -> Result<Option<(Pdu, usize)>, PduError> {
        let Some(len) = Self::frame_len(buf)? else {
            return Ok(None);
        };
        if buf.len() < len {
            return Ok(None);
        }
        Self::decode_one(&buf[..len]).map(|p| Some((p, len)))
    }

    /// Decodes exactly one whole PDU.
    pub fn decode_one(b: &[u8]) -> Result<Pdu, PduError> {
        if b.len() < 8 {
            return Err(corrupt(format!(
                "{} bytes: under the 8-byte header",
                b.len()
            )));
        }
        let (version, kind) = (b[0], b[1]);
        if version > 2 {
            return Err(PduError {
                code: code::UNSUPPORTED_VERSION,
                what: format!("protocol version {version}"),
            });
        }
        let want = |n: usize| -> Result<(), PduError> {
            if b.len() == n {
                Ok(())
            } else {
                Err(corrupt(format!(
                    "PDU type {kind} of {} bytes, want {n}",
                    b.len()
                )))
            }
        };
        let session = be16(b, 2);
        Ok(match kind {
            SERIAL_NOTIFY | SERIAL_QUERY => {
                want(12)?;
                let serial = be32(b, 8);
                if kind == SERIAL_NOTIFY {
                    Pdu::SerialNotify {
                        version,
                        session,
                        serial,
                    }
                } else {
                    Pdu::SerialQuery {
                        version,
                        session,
                        serial,
                    }
                }
            }
            RESET_QUERY => {
                want(8)?;
                Pdu::ResetQuery { version }
            }
            CACHE_RESPONSE => {
                want(8)?;
                Pdu::CacheResponse { version, session }
            }
            IPV4_PREFIX | IPV6_PREFIX => {
                let v4 = kind == IPV4_PREFIX;
                want(if v4 { 20 } else { 32 })?;
                let (flags, len, max_len) = (b[8], b[9], b[10]);
                let width = if v4 { 32 } else { 128 };
                if len > width || max_len < len || max_len > width {
                    return Err(corrupt(format!(
                        "prefix length {len}, max length {max_len} (width {width})"
                    )));
                }
                let addr: std::net::IpAddr = if v4 {
                    Ipv4Addr::from(be32(b, 12)).into()
                } else {
                    let mut a = [0u8; 16];
                    a.copy_from_slice(&b[12..28]);
                    Ipv6Addr::from(a).into()
                };
                let prefix = AnyPrefix::from_ip(addr, len, HostBits::Reject)
                    .map_err(|e| corrupt(format!("prefix {addr}/{len}: {e}")))?;
                let asn = be32(b, if v4 { 16 } else { 28 });
                Pdu::Prefix {
                    version,
                    announce: flags & 1 == 1,
                    prefix,
                    max_len,
                    asn,
                }
            }
            END_OF_DATA => {
                if version == 0 {
                    want(12)?;
                } else {
                    want(24)?;
                }
                Pdu::EndOfData {
                    version,
                    session,
                    serial: be32(b, 8),
                    timers: (version > 0).then(|| Timers {
                        refresh: be32(b, 12),
                        retry: be32(b, 16),
                        expire: be32(b, 20),
                    }),
                }
            }
            CACHE_RESET => {
                want(8)?;
                Pdu::CacheReset { version }
            }
            ROUTER_KEY if version >= 1 => {
                // Header, 20-byte SKI, 4-byte ASN, then the key info.
                if b.len() < 32 {
                    return Err(corrupt(format!("Router Key PDU of {} bytes", b.len())));
                }
                Pdu::RouterKey { version }
            }
            ERROR_REPORT => {
                if b.len() < 16 {
                    return Err(corrupt(format!("Error Report of {} bytes", b.len())));
                }
                let pdu_len = be32(b, 8) as usize;
                let text_at = 12usize
                    .checked_add(pdu_len)
                    .filter(|&e| e + 4 <= b.len())
                    .ok_or_else(|| {
                        corrupt(format!("Error Report PDU length {pdu_len} overruns it"))
                    })?;
                let text_len = be32(b, text_at) as usize;
                if text_at.checked_add(4).and_then(|e| e.checked_add(text_len)) != Some(b.len()) {
                    return Err(corrupt(format!(
                        "Error Report text length {text_len} does not end the PDU"
                    )));
                }
                Pdu::ErrorReport {
                    version,
                    code: session,
                    pdu: b[12..12 + pdu_len].to_vec(),
                    text: String::from_utf8_lossy(&b[text_at + 4..]).into_owned(),
                }
            }
            ASPA if version >= 2 => {
                if b.len() < 12 || !(b.len() - 12).is_multiple_of(4) {
                    return Err(corrupt(format!("ASPA PDU of {} bytes", b.len())));
                }
                let flags = b[2];
                let announce = flags & 1 == 1;
                let providers: Vec<u32> = (12..b.len()).step_by(4).map(|i| be32(b, i)).collect();
                if !announce && !providers.is_empty() {
                    return Err(PduError {
                        code: code::ASPA_PROVIDER_LIST_ERROR,
                        what: "ASPA withdrawal with providers".into(),
                    });
                }
                Pdu::Aspa {
                    version,
                    announce,
                    customer: be32(b, 8),
                    providers,
                }
            }
            _ => {
                return Err(PduError {
                    code: code::UNSUPPORTED_PDU_TYPE,
                    what: format!("PDU type {kind} in version {version}"),
                })
            }
        })
    }

    /// The PDU's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(32);
        let header = |b: &mut Vec<u8>, version: u8, kind: u8, field: u16| {
            b.push(version);
            b.push(kind);
            b.extend_from_slice(&field.to_be_bytes());
            b.extend_from_slice(&[0; 4]);
        };
        match self {
            Pdu::SerialNotify {
                version,
                session,
                serial,
            }
            | Pdu::SerialQuery {
                version,
                session,
                serial,
            } => {
                let kind = if matches!(self, Pdu::SerialNotify { .. }) {
                    SERIAL_NOTIFY
                } else {
                    SERIAL_QUERY
                };
                header(&mut b, *version, kind, *session);
                b.extend_from_slice(&serial.to_be_bytes());
            }
            Pdu::ResetQuery { version } => header(&mut b, *version, RESET_QUERY, 0),
            Pdu::CacheResponse { version, session } => {
                header(&mut b, *version, CACHE_RESPONSE, *session)
            }
            Pdu::Prefix {
                version,
                announce,
                prefix,
                max_len,
                asn,
            } => {
                let v4 = matches!(prefix, AnyPrefix::V4(_));
                header(
                    &mut b,
                    *version,
                    if v4 { IPV4_PREFIX } else { IPV6_PREFIX },
                    0,
                );
                b.extend_from_slice(&[*announce as u8, prefix.len(), *max_len, 0]);
                match prefix {
                    AnyPrefix::V4(p) => b.extend_from_slice(&p.addr().to_be_bytes()),
                    AnyPrefix::V6(p) => b.extend_from_slice(&p.addr().to_be_bytes()),
                }
                b.extend_from_slice(&asn.to_be_bytes());
            }
            Pdu::EndOfData {
                version,
                session,
                serial,
                timers,
            } => {
                header(&mut b, *version, END_OF_DATA, *session);
                b.extend_from_slice(&serial.to_be_bytes());
                if let Some(t) = timers {
                    for v in [t.refresh, t.retry, t.expire] {
                        b.extend_from_slice(&v.to_be_bytes());
                    }
                }
            }
            Pdu::CacheReset { version } => header(&mut b, *version, CACHE_RESET, 0),
            Pdu::RouterKey { version } => {
                header(&mut b, *version, ROUTER_KEY, 0);
                b.extend_from_slice(&[0; 24]);
            }
            Pdu::ErrorReport {
                version,
                code,
                pdu,
                text,
            } => {
                header(&mut b, *version, ERROR_REPORT, *code);
                b.extend_from_slice(&(pdu.len() as u32).to_be_bytes());
                b.extend_from_slice(pdu);
                b.extend_from_slice(&(text.len() as u32).to_be_bytes());
                b.extend_from_slice(text.as_bytes());
            }
            Pdu::Aspa {
                version,
                announce,
                customer,
                providers,
            } => {
                header(&mut b, *version, ASPA, u16::from(*announce as u8) << 8);
                b.extend_from_slice(&customer.to_be_bytes());
                for p in providers {
                    b.extend_from_slice(&p.to_be_bytes());
                }
            }
        }
        let len = b.len() as u32;
        b[4..8].copy_from_slice(&len.to_be_bytes());
        b
    }
}
