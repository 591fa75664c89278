//! Reading packet capture files: classic pcap (microsecond and nanosecond
//! timestamps, either byte order) and pcapng (any number of sections and
//! interfaces, each interface's link type and timestamp resolution),
//! streamed through a growing buffer so a capture of any size is read in
//! bounded memory.
//!
//! Written here from the formats' specifications (the tcpdump.org pcap
//! page and draft-ietf-opsawg-pcapng) rather than taken from the
//! `pcap-file` crate: its pcapng reader reads every timestamp as
//! nanoseconds whatever the interface's `if_tsresol` says (the default is
//! microseconds, so windows would be a thousand times too short) and
//! allocates an option list per packet; its pcap reader refuses a record
//! longer than the snap length, which real captures contain. The tests
//! check this reader against `pcap-file` on files both read the same way.
//!
//! Damage (a record that runs past the end of the file, a block length
//! that cannot be, a header with no known magic) stops the reading: the
//! frames before it were delivered, and [`Damage`] names the byte offset of
//! the record that could not be read.

use std::io::Read;

/// Link types (tcpdump.org's LINKTYPE_ values) the decoder knows; others
/// are passed on and counted as unsupported.
pub const LINK_NULL: u16 = 0;
pub const LINK_ETHERNET: u16 = 1;
pub const LINK_RAW: u16 = 101;
pub const LINK_LOOP: u16 = 108;
pub const LINK_LINUX_SLL: u16 = 113;
pub const LINK_IPV4: u16 = 228;
pub const LINK_IPV6: u16 = 229;
pub const LINK_LINUX_SLL2: u16 = 276;

/// A record longer than this is damage, not a packet (pcapng blocks and
/// pcap records alike; the largest snap lengths in use are 256 KiB).
const MAX_RECORD: usize = 16 << 20;

/// One captured frame.
#[derive(Clone, Copy, Debug)]
pub struct Frame<'a> {
    /// Capture time, nanoseconds since the Unix epoch (saturating).
    pub ts_ns: u64,
    /// The frame's length on the wire (may exceed `data.len()`).
    pub wire_len: u32,
    /// The link type `data` starts with.
    pub link: u16,
    pub data: &'a [u8],
}

/// Where and why reading stopped early.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    /// Byte offset in the file of the record or block that could not be read.
    pub offset: u64,
    pub reason: String,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "damaged at byte offset {}: {}", self.offset, self.reason)
    }
}

/// What went wrong while reading.
#[derive(Debug)]
pub enum ReadError {
    /// The file could not be read at all (I/O error, not a capture file).
    Fatal(String),
    /// Reading stopped here; frames before it were delivered.
    Damaged(Damage),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Fatal(s) => f.write_str(s),
            ReadError::Damaged(d) => d.fmt(f),
        }
    }
}

/// The container format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Pcap,
    PcapNg,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Pcap => "pcap",
            Kind::PcapNg => "pcapng",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    Little,
    Big,
}

impl Order {
    fn u16(self, b: &[u8], at: usize) -> u16 {
        let v = [b[at], b[at + 1]];
        match self {
            Order::Little => u16::from_le_bytes(v),
            Order::Big => u16::from_be_bytes(v),
        }
    }
    fn u32(self, b: &[u8], at: usize) -> u32 {
        let v = [b[at], b[at + 1], b[at + 2], b[at + 3]];
        match self {
            Order::Little => u32::from_le_bytes(v),
            Order::Big => u32::from_be_bytes(v),
        }
    }
}

/// A pcapng interface: its link type and how to turn its timestamps into
/// nanoseconds.
#[derive(Clone, Copy, Debug)]
struct Interface {
    link: u16,
    /// `if_tsresol`: bit 7 clear, units of 10^-n s; set, 2^-n s.
    tsresol: u8,
    /// `if_tsoffset`, seconds added to every timestamp.
    tsoffset: i64,
    /// Snap length (0: none), which bounds a simple packet block's data.
    snaplen: u32,
}

impl Interface {
    fn nanos(&self, ts: u64) -> u64 {
        let e = u32::from(self.tsresol & 0x7f);
        let ns: u128 = if self.tsresol & 0x80 != 0 {
            if e >= 128 {
                0
            } else {
                (u128::from(ts) * 1_000_000_000) >> e
            }
        } else if e <= 9 {
            u128::from(ts) * 10u128.pow(9 - e)
        } else if e <= 38 {
            u128::from(ts) / 10u128.pow(e - 9)
        } else {
            0
        };
        let off = i128::from(self.tsoffset) * 1_000_000_000;
        (ns as i128 + off).clamp(0, u64::MAX as i128) as u64
    }
}

enum State {
    Pcap {
        order: Order,
        nanos: bool,
        link: u16,
    },
    PcapNg {
        order: Order,
        interfaces: Vec<Interface>,
        /// The last timestamp seen (Simple Packet Blocks carry none).
        last_ts: u64,
    },
}

/// A capture read frame by frame: from a reader through a buffer, or
/// straight from bytes in memory (a mapped file, the benchmark's capture)
/// with no copy.
pub struct Capture<'a, R> {
    src: Option<R>,
    /// The reader's buffer, or the whole capture.
    buf: Buf<'a>,
    /// Unconsumed bytes are `buf[start..end]`; `buf[..start]` was consumed.
    start: usize,
    end: usize,
    /// File offset of `buf[start]`.
    offset: u64,
    eof: bool,
    state: State,
    kind: Kind,
    /// Distinct link types seen, in order of appearance.
    pub links: Vec<u16>,
}

enum Buf<'a> {
    Owned(Vec<u8>),
    Borrowed(&'a [u8]),
}

impl Buf<'_> {
    #[inline]
    fn bytes(&self) -> &[u8] {
        match self {
            Buf::Owned(v) => v,
            Buf::Borrowed(b) => b,
        }
    }
}

const PCAP_MAGIC_US: u32 = 0xa1b2_c3d4;
const PCAP_MAGIC_NS: u32 = 0xa1b2_3c4d;
const NG_SHB: u32 = 0x0a0d_0d0a;
const NG_BYTE_ORDER: u32 = 0x1a2b_3c4d;

impl<'a> Capture<'a, std::io::Empty> {
    /// Read a capture held in memory.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Self, ReadError> {
        Self::start(None, Buf::Borrowed(bytes), bytes.len(), true)
    }
}

impl<R: Read> Capture<'static, R> {
    /// Read the file header and recognise the format.
    pub fn open(src: R) -> Result<Self, ReadError> {
        Self::start(Some(src), Buf::Owned(vec![0; 1 << 20]), 0, false)
    }
}

impl<'a, R: Read> Capture<'a, R> {
    fn start(src: Option<R>, buf: Buf<'a>, end: usize, eof: bool) -> Result<Self, ReadError> {
        let mut c = Capture {
            src,
            buf,
            start: 0,
            end,
            offset: 0,
            eof,
            state: State::Pcap {
                order: Order::Little,
                nanos: false,
                link: 0,
            },
            kind: Kind::Pcap,
            links: Vec::new(),
        };
        c.fill(24)?;
        let head = c.avail();
        if head.len() < 4 {
            return Err(ReadError::Fatal(
                "not a capture file (shorter than a header)".into(),
            ));
        }
        let le = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let be = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        if le == NG_SHB {
            c.kind = Kind::PcapNg;
            c.state = State::PcapNg {
                order: Order::Little,
                interfaces: Vec::new(),
                last_ts: 0,
            };
            // The section header block is read as the first block.
            return Ok(c);
        }
        let (order, nanos) = match (le, be) {
            (PCAP_MAGIC_US, _) => (Order::Little, false),
            (PCAP_MAGIC_NS, _) => (Order::Little, true),
            (_, PCAP_MAGIC_US) => (Order::Big, false),
            (_, PCAP_MAGIC_NS) => (Order::Big, true),
            _ => {
                return Err(ReadError::Fatal(format!(
                    "not a pcap or pcapng file (first four bytes {:02x?})",
                    &head[..4]
                )))
            }
        };
        if head.len() < 24 {
            return Err(ReadError::Damaged(Damage {
                offset: 0,
                reason: "the pcap file header is cut short".into(),
            }));
        }
        // LinkType and additional information: the link type is the low 16
        // bits (the FCS length lives in the top bits).
        let link = (order.u32(head, 20) & 0xffff) as u16;
        c.state = State::Pcap { order, nanos, link };
        c.links.push(link);
        c.consume(24);
        Ok(c)
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    fn avail(&self) -> &[u8] {
        &self.buf.bytes()[self.start..self.end]
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        self.offset += n as u64;
    }

    /// Make at least `n` unconsumed bytes available if the file has them.
    #[inline]
    fn fill(&mut self, n: usize) -> Result<(), ReadError> {
        if self.end - self.start >= n {
            return Ok(());
        }
        self.refill(n)
    }

    #[cold]
    #[inline(never)]
    fn refill(&mut self, n: usize) -> Result<(), ReadError> {
        while self.end - self.start < n && !self.eof {
            let (Buf::Owned(buf), Some(src)) = (&mut self.buf, self.src.as_mut()) else {
                self.eof = true;
                break;
            };
            if self.start > 0 {
                buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if buf.len() < n {
                buf.resize(n.next_power_of_two(), 0);
            }
            match src.read(&mut buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(k) => self.end += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(ReadError::Fatal(format!(
                        "reading at byte offset {}: {e}",
                        self.offset + (self.end - self.start) as u64
                    )))
                }
            }
        }
        Ok(())
    }

    fn damage(&self, reason: impl Into<String>) -> ReadError {
        ReadError::Damaged(Damage {
            offset: self.offset,
            reason: reason.into(),
        })
    }

    fn note_link(&mut self, link: u16) {
        if !self.links.contains(&link) {
            self.links.push(link);
        }
    }

    /// The next frame, `None` at the clean end of the file.
    #[inline]
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, ReadError> {
        match self.state {
            State::Pcap { order, nanos, link } => self.next_pcap(order, nanos, link),
            State::PcapNg { .. } => self.next_ng(),
        }
    }

    #[inline]
    fn next_pcap(
        &mut self,
        order: Order,
        nanos: bool,
        link: u16,
    ) -> Result<Option<Frame<'_>>, ReadError> {
        self.fill(16)?;
        let have = self.end - self.start;
        if have == 0 {
            return Ok(None);
        }
        if have < 16 {
            return Err(self.damage(format!(
                "a record header is cut short ({have} of 16 bytes before the end of the file)"
            )));
        }
        let h = self.avail();
        let sec = u64::from(order.u32(h, 0));
        let frac = u64::from(order.u32(h, 4));
        let incl = order.u32(h, 8) as usize;
        let orig = order.u32(h, 12);
        if incl > MAX_RECORD {
            return Err(self.damage(format!(
                "a record claims {incl} captured bytes (more than any capture holds)"
            )));
        }
        self.fill(16 + incl)?;
        if self.end - self.start < 16 + incl {
            return Err(self.damage(format!(
                "a record of {incl} bytes runs past the end of the file"
            )));
        }
        // A sub-second field of a whole second or more (some writers make
        // them; libpcap reads them) carries into the seconds.
        let ts_ns = sec * 1_000_000_000 + if nanos { frac } else { frac * 1000 };
        let at = self.start + 16;
        self.consume(16 + incl);
        Ok(Some(Frame {
            ts_ns,
            wire_len: orig.max(incl as u32),
            link,
            data: &self.buf.bytes()[at..at + incl],
        }))
    }

    fn next_ng(&mut self) -> Result<Option<Frame<'_>>, ReadError> {
        loop {
            self.fill(12)?;
            let have = self.end - self.start;
            if have == 0 {
                return Ok(None);
            }
            if have < 12 {
                return Err(self.damage(format!(
                    "a block header is cut short ({have} bytes before the end of the file)"
                )));
            }
            let State::PcapNg { order, .. } = self.state else {
                unreachable!("next_ng on a pcap file")
            };
            let h = self.avail();
            let raw_type = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
            // A section header sets the byte order of what follows it.
            let order = if raw_type == NG_SHB {
                match u32::from_le_bytes([h[8], h[9], h[10], h[11]]) {
                    NG_BYTE_ORDER => Order::Little,
                    m if m.swap_bytes() == NG_BYTE_ORDER => Order::Big,
                    _ => return Err(self.damage("a section header has no byte-order magic")),
                }
            } else {
                order
            };
            let btype = order.u32(h, 0);
            let blen = order.u32(h, 4) as usize;
            if blen < 12 || !blen.is_multiple_of(4) || blen > MAX_RECORD {
                return Err(self.damage(format!(
                    "a block (type {btype:#x}) has an impossible length {blen}"
                )));
            }
            self.fill(blen)?;
            if self.end - self.start < blen {
                return Err(self.damage(format!(
                    "a block (type {btype:#x}) of {blen} bytes runs past the end of the file"
                )));
            }
            let block = &self.buf.bytes()[self.start..self.start + blen];
            if order.u32(block, blen - 4) as usize != blen {
                return Err(self.damage(format!(
                    "a block (type {btype:#x}) ends with a different length than it starts with"
                )));
            }
            let body = &block[8..blen - 4];
            match btype {
                NG_SHB => {
                    if body.len() < 16 {
                        return Err(self.damage("a section header block is too short"));
                    }
                    self.state = State::PcapNg {
                        order,
                        interfaces: Vec::new(),
                        last_ts: 0,
                    };
                }
                1 => {
                    // Interface description: link type, reserved, snap length, options.
                    if body.len() < 8 {
                        return Err(self.damage("an interface description block is too short"));
                    }
                    let link = order.u16(body, 0);
                    let mut iface = Interface {
                        link,
                        tsresol: 6,
                        tsoffset: 0,
                        snaplen: order.u32(body, 4),
                    };
                    for (code, val) in options(order, &body[8..]) {
                        match (code, val.len()) {
                            (9, 1..) => iface.tsresol = val[0],
                            (14, 8..) => {
                                let b: [u8; 8] = val[..8].try_into().unwrap_or([0; 8]);
                                iface.tsoffset = match order {
                                    Order::Little => i64::from_le_bytes(b),
                                    Order::Big => i64::from_be_bytes(b),
                                };
                            }
                            _ => {}
                        }
                    }
                    self.note_link(link);
                    if let State::PcapNg { interfaces, .. } = &mut self.state {
                        interfaces.push(iface);
                    }
                }
                6 | 2 | 3 => {
                    // Enhanced (6), obsolete (2) and simple (3) packet blocks.
                    let (iface_id, ts, caplen, orig, data_at) = match btype {
                        6 if body.len() >= 20 => (
                            order.u32(body, 0) as usize,
                            Some(
                                (u64::from(order.u32(body, 4)) << 32)
                                    | u64::from(order.u32(body, 8)),
                            ),
                            order.u32(body, 12) as usize,
                            order.u32(body, 16),
                            20,
                        ),
                        2 if body.len() >= 20 => (
                            usize::from(order.u16(body, 0)),
                            Some(
                                (u64::from(order.u32(body, 4)) << 32)
                                    | u64::from(order.u32(body, 8)),
                            ),
                            order.u32(body, 12) as usize,
                            order.u32(body, 16),
                            20,
                        ),
                        3 if body.len() >= 4 => {
                            let orig = order.u32(body, 0);
                            (0, None, (orig as usize).min(body.len() - 4), orig, 4)
                        }
                        _ => {
                            return Err(
                                self.damage(format!("a packet block (type {btype}) is too short"))
                            )
                        }
                    };
                    if data_at + caplen > body.len() {
                        return Err(self.damage(format!(
                            "a packet block claims {caplen} captured bytes but holds {}",
                            body.len() - data_at
                        )));
                    }
                    let State::PcapNg {
                        interfaces,
                        last_ts,
                        ..
                    } = &mut self.state
                    else {
                        unreachable!()
                    };
                    let Some(iface) = interfaces.get(iface_id).copied() else {
                        return Err(self.damage(format!(
                            "a packet names interface {iface_id}, which the section does not describe"
                        )));
                    };
                    // A simple packet block's data is padded to 4 bytes:
                    // the snap length bounds what was captured.
                    let caplen = if btype == 3 && iface.snaplen > 0 {
                        caplen.min(iface.snaplen as usize)
                    } else {
                        caplen
                    };
                    let ts_ns = match ts {
                        Some(t) => iface.nanos(t),
                        None => *last_ts,
                    };
                    *last_ts = ts_ns;
                    let at = self.start + 8 + data_at;
                    self.consume(blen);
                    return Ok(Some(Frame {
                        ts_ns,
                        wire_len: orig.max(caplen as u32),
                        link: iface.link,
                        data: &self.buf.bytes()[at..at + caplen],
                    }));
                }
                _ => {} // statistics, name resolution, custom: not frames
            }
            self.consume(blen);
        }
    }
}

/// A pcapng option list: `(code, value)` until `opt_endofopt` or the end.
fn options(order: Order, mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        if b.len() < 4 {
            return None;
        }
        let code = order.u16(b, 0);
        let len = usize::from(order.u16(b, 2));
        if code == 0 || 4 + len > b.len() {
            return None;
        }
        let val = &b[4..4 + len];
        let next = (4 + len).div_ceil(4) * 4;
        b = b.get(next..).unwrap_or(&[]);
        Some((code, val))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    type Frames = Vec<(u64, u32, u16, Vec<u8>)>;

    fn drain<R: Read>(mut c: Capture<'_, R>) -> (Frames, Option<ReadError>) {
        let mut out = Vec::new();
        loop {
            match c.next_frame() {
                Ok(Some(f)) => out.push((f.ts_ns, f.wire_len, f.link, f.data.to_vec())),
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(e)),
            }
        }
    }

    /// Read through a reader and from memory: both must agree.
    fn frames(bytes: &[u8]) -> (Frames, Option<ReadError>) {
        let (a, ea) = drain(Capture::open(bytes).expect("header"));
        let (b, eb) = drain(Capture::from_bytes(bytes).expect("header"));
        assert_eq!(a, b);
        assert_eq!(format!("{ea:?}"), format!("{eb:?}"));
        (a, ea)
    }

    fn pcap_bytes(big: bool, nanos: bool, recs: &[(u32, u32, &[u8], u32)]) -> Vec<u8> {
        let w32 = |v: &mut Vec<u8>, x: u32| {
            v.extend_from_slice(&if big {
                x.to_be_bytes()
            } else {
                x.to_le_bytes()
            })
        };
        let mut v = Vec::new();
        w32(&mut v, if nanos { PCAP_MAGIC_NS } else { PCAP_MAGIC_US });
        let (maj, min) = if big {
            ([0, 2], [0, 4])
        } else {
            ([2, 0], [4, 0])
        };
        v.extend_from_slice(&maj);
        v.extend_from_slice(&min);
        w32(&mut v, 0);
        w32(&mut v, 0);
        w32(&mut v, 65535);
        w32(&mut v, 1);
        for (s, f, d, orig) in recs {
            w32(&mut v, *s);
            w32(&mut v, *f);
            w32(&mut v, d.len() as u32);
            w32(&mut v, *orig);
            v.extend_from_slice(d);
        }
        v
    }

    #[test]
    fn pcap_both_orders_and_resolutions() {
        for big in [false, true] {
            for nanos in [false, true] {
                let b = pcap_bytes(big, nanos, &[(10, 5, b"abc", 60), (11, 0, b"", 0)]);
                let (f, e) = frames(&b);
                assert!(e.is_none());
                let unit = if nanos { 1 } else { 1000 };
                assert_eq!(f[0], (10_000_000_000 + 5 * unit, 60, 1, b"abc".to_vec()));
                assert_eq!(f[1].0, 11_000_000_000);
            }
        }
    }

    #[test]
    fn pcap_truncated_record_is_damage_at_its_offset() {
        let mut b = pcap_bytes(false, false, &[(1, 0, b"abcd", 4), (2, 0, b"efgh", 4)]);
        b.truncate(b.len() - 2);
        let (f, e) = frames(&b);
        assert_eq!(f.len(), 1);
        match e {
            Some(ReadError::Damaged(d)) => assert_eq!(d.offset, 24 + 16 + 4),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn not_a_capture_is_fatal() {
        assert!(matches!(
            Capture::open(&b"hello world, this is text"[..]),
            Err(ReadError::Fatal(_))
        ));
    }

    fn ng_block(t: u32, body: &[u8]) -> Vec<u8> {
        let mut body = body.to_vec();
        while !body.len().is_multiple_of(4) {
            body.push(0);
        }
        let len = (body.len() + 12) as u32;
        let mut v = t.to_le_bytes().to_vec();
        v.extend_from_slice(&len.to_le_bytes());
        v.extend_from_slice(&body);
        v.extend_from_slice(&len.to_le_bytes());
        v
    }

    #[test]
    fn pcapng_tsresol_and_offset() {
        let mut shb = NG_BYTE_ORDER.to_le_bytes().to_vec();
        shb.extend_from_slice(&[1, 0, 0, 0]);
        shb.extend_from_slice(&u64::MAX.to_le_bytes());
        let mut file = ng_block(NG_SHB, &shb);
        // Interface 0: default microseconds; interface 1: nanoseconds
        // (tsresol 9) with a 100 s offset; interface 2: 2^-10 s.
        let idb = |link: u16, opts: &[(u16, Vec<u8>)]| {
            let mut b = link.to_le_bytes().to_vec();
            b.extend_from_slice(&[0, 0]);
            b.extend_from_slice(&0u32.to_le_bytes());
            for (c, v) in opts {
                b.extend_from_slice(&c.to_le_bytes());
                b.extend_from_slice(&(v.len() as u16).to_le_bytes());
                b.extend_from_slice(v);
                while !b.len().is_multiple_of(4) {
                    b.push(0);
                }
            }
            b.extend_from_slice(&[0, 0, 0, 0]);
            ng_block(1, &b)
        };
        file.extend(idb(1, &[]));
        file.extend(idb(
            101,
            &[(9, vec![9]), (14, 100i64.to_le_bytes().to_vec())],
        ));
        file.extend(idb(113, &[(9, vec![0x80 | 10])]));
        let epb = |iface: u32, ts: u64, data: &[u8], orig: u32| {
            let mut b = iface.to_le_bytes().to_vec();
            b.extend_from_slice(&((ts >> 32) as u32).to_le_bytes());
            b.extend_from_slice(&(ts as u32).to_le_bytes());
            b.extend_from_slice(&(data.len() as u32).to_le_bytes());
            b.extend_from_slice(&orig.to_le_bytes());
            b.extend_from_slice(data);
            ng_block(6, &b)
        };
        file.extend(epb(0, 1_500_000, b"xyz", 70));
        file.extend(ng_block(5, &[0; 12])); // statistics: skipped
        file.extend(epb(1, 2_000_000_001, b"", 0));
        file.extend(epb(2, 3 << 10, b"q", 1));
        let (f, e) = frames(&file);
        assert!(e.is_none(), "{e:?}");
        assert_eq!(f.len(), 3);
        assert_eq!(f[0], (1_500_000_000, 70, 1, b"xyz".to_vec()));
        assert_eq!(f[1].0, 102_000_000_001);
        assert_eq!(f[1].2, 101);
        assert_eq!(f[2].0, 3_000_000_000);
        assert_eq!(f[2].2, 113);
        // A damaged last block: the earlier frames stay, the offset is the block's.
        let cut = file.len() - 3;
        let (f2, e2) = frames(&file[..cut]);
        assert_eq!(f2.len(), 2);
        let last_block = file.len() - epb(2, 3 << 10, b"q", 1).len();
        match e2 {
            Some(ReadError::Damaged(d)) => assert_eq!(d.offset as usize, last_block),
            other => panic!("{other:?}"),
        }
    }

    /// A big-endian section after a little-endian one (interfaces reset),
    /// with obsolete (type 2) and simple (type 3) packet blocks; a simple
    /// block's padding is cut by the snap length.
    #[test]
    fn pcapng_big_endian_sections_and_old_blocks() {
        fn block_be(t: u32, body: &[u8]) -> Vec<u8> {
            let mut body = body.to_vec();
            while !body.len().is_multiple_of(4) {
                body.push(0);
            }
            let len = (body.len() + 12) as u32;
            let mut v = t.to_be_bytes().to_vec();
            v.extend_from_slice(&len.to_be_bytes());
            v.extend_from_slice(&body);
            v.extend_from_slice(&len.to_be_bytes());
            v
        }
        let mut shb = NG_BYTE_ORDER.to_le_bytes().to_vec();
        shb.extend_from_slice(&[1, 0, 0, 0]);
        shb.extend_from_slice(&u64::MAX.to_le_bytes());
        let mut file = ng_block(NG_SHB, &shb);
        let mut idb = 1u16.to_le_bytes().to_vec();
        idb.extend_from_slice(&[0, 0]);
        idb.extend_from_slice(&0u32.to_le_bytes());
        file.extend(ng_block(1, &idb));
        let mut epb = 0u32.to_le_bytes().to_vec();
        epb.extend_from_slice(&0u32.to_le_bytes());
        epb.extend_from_slice(&5_000_000u32.to_le_bytes());
        epb.extend_from_slice(&1u32.to_le_bytes());
        epb.extend_from_slice(&1u32.to_le_bytes());
        epb.push(0xaa);
        file.extend(ng_block(6, &epb));
        // Section 2, big-endian: raw IP with snap length 5.
        let mut shb = NG_BYTE_ORDER.to_be_bytes().to_vec();
        shb.extend_from_slice(&[0, 1, 0, 0]);
        shb.extend_from_slice(&u64::MAX.to_be_bytes());
        file.extend(block_be(NG_SHB, &shb));
        let mut idb = 101u16.to_be_bytes().to_vec();
        idb.extend_from_slice(&[0, 0]);
        idb.extend_from_slice(&5u32.to_be_bytes());
        file.extend(block_be(1, &idb));
        // Obsolete packet block: interface (u16), drops (u16), ts, caplen, len.
        let mut opb = 0u16.to_be_bytes().to_vec();
        opb.extend_from_slice(&0u16.to_be_bytes());
        opb.extend_from_slice(&0u32.to_be_bytes());
        opb.extend_from_slice(&7_000_000u32.to_be_bytes());
        opb.extend_from_slice(&3u32.to_be_bytes());
        opb.extend_from_slice(&3u32.to_be_bytes());
        opb.extend_from_slice(b"abc");
        file.extend(block_be(2, &opb));
        // Simple packet block: original length 9, 5 captured (snap length),
        // padded to 12 in the block; the last timestamp is kept.
        let mut spb = 9u32.to_be_bytes().to_vec();
        spb.extend_from_slice(b"123456789");
        file.extend(block_be(3, &spb));
        let (f, e) = frames(&file);
        assert!(e.is_none(), "{e:?}");
        assert_eq!(f.len(), 3);
        assert_eq!(f[0], (5_000_000_000, 1, 1, vec![0xaa]));
        assert_eq!(f[1], (7_000_000_000, 3, 101, b"abc".to_vec()));
        assert_eq!(f[2], (7_000_000_000, 9, 101, b"12345".to_vec()));
        // A packet naming an interface of the first section only: damage.
        let mut bad = file.clone();
        let mut epb2 = 1u32.to_be_bytes().to_vec();
        epb2.extend_from_slice(&[0; 16]);
        bad.extend(block_be(6, &epb2));
        let (f, e) = frames(&bad);
        assert_eq!(f.len(), 3);
        assert!(matches!(e, Some(ReadError::Damaged(_))), "{e:?}");
    }

    /// A sub-second field past a second carries into the seconds.
    #[test]
    fn pcap_sub_second_overflow_carries() {
        let b = pcap_bytes(false, false, &[(10, 1_500_000, b"x", 1)]);
        let (f, e) = frames(&b);
        assert!(e.is_none());
        assert_eq!(f[0].0, 11_500_000_000);
    }

    /// Differential: classic pcap files written by the `pcap-file` crate
    /// read back the same frames here.
    #[test]
    fn agrees_with_pcap_file_crate() {
        use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
        use std::time::Duration;
        let mut rng = ipfib::gen::Rng::new(7);
        for nanos in [false, true] {
            let header = PcapHeader {
                ts_resolution: if nanos {
                    pcap_file::TsResolution::NanoSecond
                } else {
                    pcap_file::TsResolution::MicroSecond
                },
                ..PcapHeader::default()
            };
            let mut w = PcapWriter::with_header(Vec::new(), header).expect("writer");
            let mut want = Vec::new();
            for _ in 0..500 {
                let len = rng.below(200) as usize;
                let data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
                let sec = rng.below(2_000_000_000);
                let sub = if nanos {
                    rng.below(1_000_000_000)
                } else {
                    rng.below(1_000_000) * 1000
                };
                let ts = Duration::new(sec, sub as u32);
                let orig = len as u32 + rng.below(100) as u32;
                w.write_packet(&PcapPacket::new(ts, orig, &data))
                    .expect("write");
                want.push((sec * 1_000_000_000 + sub, orig, 1u16, data));
            }
            let bytes = w.into_writer();
            let (got, e) = frames(&bytes);
            assert!(e.is_none());
            assert_eq!(got, want);
            // Read in dribs and drabs too (a reader returning one byte at a time).
            struct Slow<'a>(&'a [u8]);
            impl Read for Slow<'_> {
                fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
                    let n = self.0.len().min(out.len()).min(7);
                    out[..n].copy_from_slice(&self.0[..n]);
                    self.0 = &self.0[n..];
                    Ok(n)
                }
            }
            let mut c = Capture::open(Slow(&bytes)).expect("open");
            let mut n = 0;
            while let Some(f) = c.next_frame().expect("frame") {
                assert_eq!(f.data, &want[n].3[..]);
                n += 1;
            }
            assert_eq!(n, want.len());
        }
    }
}
