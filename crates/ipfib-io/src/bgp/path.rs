//! AS paths and ORIGIN as decoded: an AS path in one allocation of
//! words, segment by segment as sent.

use std::sync::Arc;

/// AS path segment types (RFC 4271 §4.3, RFC 5065).
pub const AS_SET: u8 = 1;
pub const AS_SEQUENCE: u8 = 2;
pub const AS_CONFED_SEQUENCE: u8 = 3;
pub const AS_CONFED_SET: u8 = 4;

/// An AS path in one allocation: each segment is a header word
/// `(type << 16) | count` followed by `count` ASNs. Every segment layout
/// the wire allows is kept as sent.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct AsPath(pub Arc<[u32]>);

/// One segment of an [`AsPath`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment<'a> {
    pub kind: u8,
    pub asns: &'a [u32],
}

impl AsPath {
    /// Encode segments `(kind, asns)`.
    pub fn encode<'a>(segments: impl IntoIterator<Item = (u8, &'a [u32])>) -> Vec<u32> {
        let mut out = Vec::new();
        for (kind, asns) in segments {
            out.push(((kind as u32) << 16) | asns.len() as u32);
            out.extend_from_slice(asns);
        }
        out
    }

    /// The segments, in wire order.
    pub fn segments(&self) -> Segments<'_> {
        Segments { rest: &self.0 }
    }

    /// Path length for route selection (RFC 4271 §9.1.2.2: a set counts
    /// as one, confederation segments not at all).
    pub fn selection_len(&self) -> u32 {
        self.segments()
            .map(|s| match s.kind {
                AS_SEQUENCE => s.asns.len() as u32,
                AS_SET => 1,
                _ => 0,
            })
            .sum()
    }

    /// The origin AS: the last ASN of the last segment when that segment
    /// is a sequence (or a set of exactly one); `None` for an empty path
    /// (a route of the monitored router's own AS) or an aggregate whose
    /// last segment is a set of several.
    ///
    /// ```
    /// use ipfib_io::bgp::AsPath;
    ///
    /// // AS_SEQUENCE (2) 64500 64501, then AS_SET (1) {64502, 64503}
    /// let words = AsPath::encode([(2, &[64500, 64501][..]), (1, &[64502, 64503][..])]);
    /// let path = AsPath(words.into());
    /// assert_eq!(path.origin_asn(), None); // an aggregate: no single origin
    /// assert_eq!(path.selection_len(), 3); // a set counts as one
    /// assert_eq!(path.flat(), [64500, 64501, 64502, 64503]);
    /// ```
    pub fn origin_asn(&self) -> Option<u32> {
        let last = self.segments().last()?;
        match last.kind {
            AS_SEQUENCE | AS_CONFED_SEQUENCE => last.asns.last().copied(),
            AS_SET | AS_CONFED_SET if last.asns.len() == 1 => last.asns.first().copied(),
            _ => None,
        }
    }

    /// Every ASN in order, sets flattened (for display and tests).
    pub fn flat(&self) -> Vec<u32> {
        self.segments()
            .flat_map(|s| s.asns.iter().copied())
            .collect()
    }
}

/// Iterator over an [`AsPath`]'s segments.
pub struct Segments<'a> {
    rest: &'a [u32],
}

impl<'a> Iterator for Segments<'a> {
    type Item = Segment<'a>;
    fn next(&mut self) -> Option<Segment<'a>> {
        let (&head, rest) = self.rest.split_first()?;
        let n = ((head & 0xffff) as usize).min(rest.len());
        let (asns, rest) = rest.split_at(n);
        self.rest = rest;
        Some(Segment {
            kind: (head >> 16) as u8,
            asns,
        })
    }
}

/// ORIGIN (RFC 4271 §5.1.1).
///
/// ```
/// use ipfib_io::bgp::Origin;
///
/// assert_eq!(Origin::from_wire(2).map(Origin::as_str), Some("incomplete"));
/// assert_eq!(Origin::from_wire(3), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Origin {
    #[default]
    Igp = 0,
    Egp = 1,
    Incomplete = 2,
}

impl Origin {
    pub fn from_wire(v: u8) -> Option<Origin> {
        match v {
            0 => Some(Origin::Igp),
            1 => Some(Origin::Egp),
            2 => Some(Origin::Incomplete),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Igp => "igp",
            Origin::Egp => "egp",
            Origin::Incomplete => "incomplete",
        }
    }
}
