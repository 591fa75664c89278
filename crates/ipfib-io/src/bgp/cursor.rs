//! The byte cursor every decoder here reads through, the errors it
//! returns, and the BGP message header.

/// What RFC 7606 has a receiver do about a malformed attribute (the third
/// action, "session reset", is a [`WireError`] from [`decode_update`](super::decode_update)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorAction {
    /// The attribute is ignored; the routes stand.
    AttributeDiscard,
    /// The UPDATE's announced routes are withdrawn instead.
    TreatAsWithdraw,
}

impl ErrorAction {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorAction::AttributeDiscard => "attribute-discard",
            ErrorAction::TreatAsWithdraw => "treat-as-withdraw",
        }
    }
}

/// One attribute error an UPDATE had (RFC 7606), with where it was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttrError {
    pub action: ErrorAction,
    /// Attribute type code (0 when the attribute header itself was bad).
    pub code: u8,
    /// Byte offset of the attribute within the BGP message.
    pub at: usize,
    pub what: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("BGP message truncated at byte {at}: {what} needs {need} bytes, {have} left")]
    Truncated {
        at: usize,
        what: &'static str,
        need: usize,
        have: usize,
    },
    #[error("BGP message at byte {at}: {what}")]
    Malformed { at: usize, what: String },
}

impl WireError {
    /// The error without the "BGP message" preamble, to nest in another.
    pub fn brief(&self) -> String {
        match self {
            WireError::Truncated {
                at,
                what,
                need,
                have,
            } => format!("{what} needs {need} bytes at byte {at}, {have} left"),
            WireError::Malformed { at, what } => format!("{what} at byte {at}"),
        }
    }
}

/// A cursor over wire bytes that knows its offset: every read checks the
/// length first and names what it was reading when bytes run out.
// Shared with the RIB's BMP framing (`ipfib_rib::bmp`), which reads its
// headers through it; not API.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct Cur<'a> {
    pub buf: &'a [u8],
    pub at: usize,
}

impl<'a> Cur<'a> {
    pub fn new(buf: &'a [u8], at: usize) -> Self {
        Cur { buf, at }
    }
    pub fn left(&self) -> usize {
        self.buf.len()
    }
    pub fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], WireError> {
        if n > self.buf.len() {
            return Err(WireError::Truncated {
                at: self.at,
                what,
                need: n,
                have: self.buf.len(),
            });
        }
        let (h, t) = self.buf.split_at(n);
        self.buf = t;
        self.at += n;
        Ok(h)
    }
    pub fn sub(&mut self, n: usize, what: &'static str) -> Result<Cur<'a>, WireError> {
        let at = self.at;
        Ok(Cur::new(self.take(n, what)?, at))
    }
    /// The next `N` bytes as an array.
    pub fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], WireError> {
        let at = self.at;
        <[u8; N]>::try_from(self.take(N, what)?).map_err(|_| WireError::Malformed {
            at,
            what: format!("{what}: {N} bytes expected"),
        })
    }
    pub fn u8(&mut self, what: &'static str) -> Result<u8, WireError> {
        let [b] = self.array(what)?;
        Ok(b)
    }
    pub fn u16(&mut self, what: &'static str) -> Result<u16, WireError> {
        Ok(u16::from_be_bytes(self.array(what)?))
    }
    pub fn u32(&mut self, what: &'static str) -> Result<u32, WireError> {
        Ok(u32::from_be_bytes(self.array(what)?))
    }
    pub fn bad(&self, what: impl Into<String>) -> WireError {
        WireError::Malformed {
            at: self.at,
            what: what.into(),
        }
    }
}

/// BGP message types.
pub const OPEN: u8 = 1;
pub const UPDATE: u8 = 2;

/// The BGP header (marker, length, type): the body and the type.
pub fn bgp_message(buf: &[u8]) -> Result<(u8, Cur<'_>, usize), WireError> {
    let mut c = Cur::new(buf, 0);
    let marker = c.take(16, "BGP marker")?;
    if marker.iter().any(|&b| b != 0xff) {
        return Err(WireError::Malformed {
            at: 0,
            what: "BGP marker is not all ones".into(),
        });
    }
    let len = c.u16("BGP length")? as usize;
    let kind = c.u8("BGP type")?;
    if len < 19 || len > buf.len() {
        return Err(WireError::Malformed {
            at: 16,
            what: format!("BGP length {len} outside 19..={}", buf.len()),
        });
    }
    let body = buf.get(19..len).ok_or_else(|| WireError::Malformed {
        at: 16,
        what: format!("BGP length {len} outside 19..={}", buf.len()),
    })?;
    let body = Cur::new(body, 19);
    Ok((kind, body, len))
}
