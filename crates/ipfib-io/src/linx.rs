//! Text update streams (the LINX files of the Poptrie evaluation):
//! `UNIXTIME a|w PREFIX/LEN NEXTHOP` per line, withdrawals carrying
//! `0.0.0.0` (or `::`) as next hop, `#` comments and blank lines skipped.
//! The file names no peer, so every update's [`PeerId`] is empty.

use crate::damage::{Damage, DamageKind};
use crate::error::{quote, ReadError};
use crate::format::Format;
use crate::input::next_line;
use crate::report::Report;
use crate::update::{Change, Event, PeerId, Update};
use ipfib::prefix::{AnyPrefix, HostBits};
use std::io::BufRead;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// The events of a text update stream, one line at a time.
pub(crate) struct TextEvents<R> {
    reader: R,
    path: PathBuf,
    host_bits: HostBits,
    strict: bool,
    buf: Vec<u8>,
    offset: u64,
    done: bool,
    pub report: Report,
}

impl<R: BufRead> TextEvents<R> {
    pub fn new(reader: R, path: &Path, host_bits: HostBits, strict: bool) -> Self {
        TextEvents {
            reader,
            path: path.to_path_buf(),
            host_bits,
            strict,
            buf: Vec::with_capacity(128),
            offset: 0,
            done: false,
            report: Report::new(Format::Updates),
        }
    }

    pub fn next_event(&mut self) -> Option<Result<Event, ReadError>> {
        while !self.done {
            match next_line(&mut self.reader, &mut self.buf) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    let kind = if e
                        .get_ref()
                        .is_some_and(|i| i.is::<crate::input::LineTooLong>())
                    {
                        DamageKind::LineTooLong {
                            limit: crate::input::MAX_LINE_BYTES,
                        }
                    } else {
                        DamageKind::Stream
                    };
                    let damage = Damage {
                        offset: self.offset,
                        records_before: self.report.records,
                        kind,
                        stream_error: Some(e.to_string()),
                    };
                    self.done = true;
                    if self.strict {
                        let path = self.path.clone();
                        return Some(Err(ReadError::Damaged { path, damage }));
                    }
                    self.report.damage = Some(damage);
                    return None;
                }
            }
            self.report.records += 1;
            self.offset += self.buf.len() as u64;
            self.report.bytes = self.offset;
            let line = self.report.records;
            let text = String::from_utf8_lossy(&self.buf);
            match parse_update(text.trim_end_matches(['\n', '\r']), self.host_bits) {
                Ok(None) => {}
                Ok(Some(ev)) => return Some(Ok(ev)),
                Err(BadUpdate(reason)) => {
                    let e = ReadError::BadUpdate {
                        path: self.path.clone(),
                        line,
                        reason,
                    };
                    if self.strict {
                        self.done = true;
                        return Some(Err(e));
                    }
                    self.report.skip(e);
                }
            }
        }
        self.done = true;
        None
    }
}

/// Why one update line is bad.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct BadUpdate(pub String);

/// One line: `Ok(None)` for a blank or comment line.
pub(crate) fn parse_update(line: &str, host_bits: HostBits) -> Result<Option<Event>, BadUpdate> {
    let mut tokens = line.split_ascii_whitespace();
    let time = match tokens.next() {
        None => return Ok(None),
        Some(t) if t.starts_with('#') => return Ok(None),
        Some(t) => t,
    };
    let bad = |what: &str| BadUpdate(format!("{what} in {:?}", quote(line)));
    let timestamp: u32 = time.parse().map_err(|_| bad("invalid UNIXTIME"))?;
    let kind = tokens.next().ok_or_else(|| bad("missing a|w"))?;
    let prefix = tokens.next().ok_or_else(|| bad("missing PREFIX/LEN"))?;
    let prefix = AnyPrefix::parse(prefix, host_bits).map_err(|e| BadUpdate(e.to_string()))?;
    let next_hop = tokens.next().ok_or_else(|| bad("missing NEXTHOP"))?;
    let next_hop: IpAddr = next_hop.parse().map_err(|_| bad("invalid NEXTHOP"))?;
    if let Some(extra) = tokens.next() {
        return Err(bad(&format!("unexpected {extra:?}")));
    }
    let change = match kind {
        "a" => Change::Announce {
            next_hop: Some(next_hop),
            as_path: None,
        },
        "w" => Change::Withdraw,
        _ => return Err(bad("expected 'a' or 'w'")),
    };
    Ok(Some(Event::Update(Update {
        timestamp,
        microseconds: None,
        peer: PeerId {
            addr: None,
            asn: None,
        },
        prefix,
        path_id: None,
        change,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        let e = parse_update(
            "1418774413 a 206.152.15.0/24 195.66.226.74",
            HostBits::Reject,
        );
        let Ok(Some(Event::Update(u))) = e else {
            panic!("{e:?}")
        };
        assert_eq!(u.timestamp, 1418774413);
        assert_eq!(u.prefix.to_string(), "206.152.15.0/24");
        assert_eq!(
            u.change,
            Change::Announce {
                next_hop: Some("195.66.226.74".parse().unwrap()),
                as_path: None
            }
        );
        let w = parse_update("1418774413 w 202.70.88.0/21 0.0.0.0", HostBits::Reject);
        assert!(matches!(
            w,
            Ok(Some(Event::Update(Update {
                change: Change::Withdraw,
                ..
            })))
        ));
        assert_eq!(parse_update("  # x", HostBits::Reject), Ok(None));
        assert_eq!(parse_update("", HostBits::Reject), Ok(None));
        for bad in [
            "x a 1.0.0.0/8 1.1.1.1",
            "1 x 1.0.0.0/8 1.1.1.1",
            "1 a 1.0.0.1/8 1.1.1.1",
            "1 a 1.0.0.0/8",
            "1 a 1.0.0.0/8 nope",
            "1 a 1.0.0.0/8 1.1.1.1 extra",
        ] {
            assert!(parse_update(bad, HostBits::Reject).is_err(), "{bad}");
        }
    }
}
