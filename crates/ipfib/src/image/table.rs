//! The table a compiled file holds: per family, two engines (over value
//! slots, and over route ordinals), the route list and the value text.

use super::codec::{invalid, Answers, ImageError, Reader, Writer};
use crate::engine::auto::{AutoEngine, AutoOptions};
use crate::engine::{Engine, Family};
use crate::intervals::compile;
use crate::mem::LookupBuf;
use crate::prefix::{AnyAddr, AnyPrefix, Prefix};
use crate::route_table::RouteTable;
use crate::table::Table;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

/// One family of a compiled table file, answering from the mapping.
///
/// - `by_value` answers a value slot (equal neighbours merged: the
///   smaller, faster engine for value-only lookups);
/// - `by_route` answers a route ordinal, whose prefix and value slot the
///   route list gives.
///
/// ```
/// use ipfib::engine::auto::AutoOptions;
/// use ipfib::image::{to_bytes, FamilyImage, ImageTable};
/// use ipfib::table::Table;
/// let mut t = Table::new();
/// t.insert("10.0.0.0/8".parse()?, "ten")?;
/// let img = ImageTable::from_bytes(&to_bytes(&t, &AutoOptions::default(), "")?)?;
/// let v4: &FamilyImage<u32> = &img.v4;
/// assert_eq!(v4.lookup(0x0a00_0001), Some(("10.0.0.0/8".parse()?, "ten")));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct FamilyImage<A: Family> {
    by_value: AutoEngine<A>,
    by_route: AutoEngine<A>,
    prefixes: LookupBuf<Prefix<A>>,
    slots: LookupBuf<u32>,
    /// Value `i` is `text[ends[i - 1]..ends[i]]` (`ends[-1]` = 0).
    ends: LookupBuf<u64>,
    text: LookupBuf<u8>,
}

/// Both families of an opened compiled table file.
///
/// ```
/// use ipfib::engine::auto::AutoOptions;
/// use ipfib::image::{to_bytes, ImageTable};
/// use ipfib::prefix::AnyAddr;
/// use ipfib::table::Table;
/// let mut t = Table::new();
/// t.insert("10.0.0.0/8".parse()?, "ten")?;
/// let img = ImageTable::from_bytes(&to_bytes(&t, &AutoOptions::default(), "routes.txt")?)?;
/// assert_eq!(img.source, "routes.txt");
/// assert_eq!(img.lookup(AnyAddr::parse("10.1.2.3")?).map(|(_, v)| v), Some("ten"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ImageTable {
    pub v4: FamilyImage<u32>,
    pub v6: FamilyImage<u128>,
    /// What the file was compiled from (free text, e.g. the source path,
    /// its format and the value chosen).
    pub source: String,
}

impl<A: Family> FamilyImage<A> {
    /// Longest-prefix match: the matching route's prefix and value.
    ///
    /// ```
    /// # use ipfib::{engine::auto::AutoOptions, image::{to_bytes, ImageTable}, table::Table};
    /// # let mut t = Table::new();
    /// # t.insert("10.0.0.0/8".parse()?, "ten")?;
    /// # t.insert("10.1.0.0/16".parse()?, "lab")?;
    /// # let img = ImageTable::from_bytes(&to_bytes(&t, &AutoOptions::default(), "")?)?;
    /// // `img` holds 10.0.0.0/8 -> "ten" and 10.1.0.0/16 -> "lab".
    /// assert_eq!(img.v4.lookup(0x0a01_0001), Some(("10.1.0.0/16".parse()?, "lab")));
    /// assert_eq!(img.v4.lookup(0x0a02_0001).map(|(_, v)| v), Some("ten"));
    /// assert_eq!(img.v4.lookup(0x0b00_0000), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn lookup(&self, addr: A) -> Option<(Prefix<A>, &str)> {
        self.route(self.by_route.lookup(addr))
    }

    /// The value slot matching `addr` ([`NO_ROUTE`](crate::engine::NO_ROUTE) on a miss).
    ///
    /// ```
    /// # use ipfib::{engine::auto::AutoOptions, image::{to_bytes, ImageTable}, table::Table};
    /// use ipfib::engine::NO_ROUTE;
    /// # let mut t = Table::new();
    /// # t.insert("10.0.0.0/8".parse()?, "ten")?;
    /// # t.insert("10.1.0.0/16".parse()?, "lab")?;
    /// # let img = ImageTable::from_bytes(&to_bytes(&t, &AutoOptions::default(), "")?)?;
    /// // `img` holds 10.0.0.0/8 -> "ten" and 10.1.0.0/16 -> "lab".
    /// let slot = img.v4.value_slot(0x0a01_0001);
    /// assert_eq!(img.v4.value(slot), Some("lab"));
    /// assert_eq!(img.v4.value_slot(0x0b00_0000), NO_ROUTE);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn value_slot(&self, addr: A) -> u32 {
        self.by_value.lookup(addr)
    }

    /// Route ordinals for a batch (resolve each with [`FamilyImage::route`]).
    ///
    /// ```
    /// # use ipfib::{engine::auto::AutoOptions, image::{to_bytes, ImageTable}, table::Table};
    /// # let mut t = Table::new();
    /// # t.insert("10.0.0.0/8".parse()?, "ten")?;
    /// # t.insert("10.1.0.0/16".parse()?, "lab")?;
    /// # let img = ImageTable::from_bytes(&to_bytes(&t, &AutoOptions::default(), "")?)?;
    /// // `img` holds 10.0.0.0/8 -> "ten" and 10.1.0.0/16 -> "lab".
    /// let mut out = [0u32; 3];
    /// img.v4.lookup_batch::<8>(&[0x0a01_0001, 0x0a02_0001, 0x0b00_0000], &mut out);
    /// let values: Vec<_> = out.iter().map(|&o| img.v4.route(o).map(|(_, v)| v)).collect();
    /// assert_eq!(values, [Some("lab"), Some("ten"), None]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn lookup_batch<const M: usize>(&self, addrs: &[A], out: &mut [u32]) {
        self.by_route.lookup_batch::<M>(addrs, out)
    }

    /// The route at an ordinal (`None` for [`NO_ROUTE`](crate::engine::NO_ROUTE)).
    ///
    /// ```
    /// # use ipfib::{engine::auto::AutoOptions, image::{to_bytes, ImageTable}, table::Table};
    /// use ipfib::engine::NO_ROUTE;
    /// # let mut t = Table::new();
    /// # t.insert("10.0.0.0/8".parse()?, "ten")?;
    /// # t.insert("10.1.0.0/16".parse()?, "lab")?;
    /// # let img = ImageTable::from_bytes(&to_bytes(&t, &AutoOptions::default(), "")?)?;
    /// // `img` holds 10.0.0.0/8 -> "ten" and 10.1.0.0/16 -> "lab".
    /// assert_eq!(img.v4.route(0), Some(("10.0.0.0/8".parse()?, "ten"))); // walk order
    /// assert_eq!(img.v4.route(1).map(|(_, v)| v), Some("lab"));
    /// assert_eq!(img.v4.route(NO_ROUTE), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn route(&self, ordinal: u32) -> Option<(Prefix<A>, &str)> {
        let i = ordinal as usize;
        let p = *self.prefixes.get(i)?;
        Some((p, self.value(*self.slots.get(i)?)?))
    }

    /// The text of value slot `slot`.
    ///
    /// ```
    /// # use ipfib::{engine::auto::AutoOptions, image::{to_bytes, ImageTable}, table::Table};
    /// # let mut t = Table::new();
    /// # t.insert("10.0.0.0/8".parse()?, "ten")?;
    /// # t.insert("10.1.0.0/16".parse()?, "lab")?;
    /// # let img = ImageTable::from_bytes(&to_bytes(&t, &AutoOptions::default(), "")?)?;
    /// // `img` holds 10.0.0.0/8 -> "ten" and 10.1.0.0/16 -> "lab".
    /// assert_eq!(img.v4.value(0), Some("ten")); // slots in order of first use
    /// assert_eq!(img.v4.value(1), Some("lab"));
    /// assert_eq!(img.v4.value(2), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn value(&self, slot: u32) -> Option<&str> {
        let i = slot as usize;
        let end = *self.ends.get(i)? as usize;
        let start = match i {
            0 => 0,
            _ => *self.ends.get(i - 1)? as usize,
        };
        // Checked UTF-8 on char boundaries when the file was opened.
        std::str::from_utf8(self.text.get(start..end)?).ok()
    }

    /// Routes held.
    ///
    /// ```
    /// # use ipfib::{engine::auto::AutoOptions, image::{to_bytes, ImageTable}, table::Table};
    /// # let mut t = Table::new();
    /// # t.insert("10.0.0.0/8".parse()?, "ten")?;
    /// # t.insert("10.1.0.0/16".parse()?, "lab")?;
    /// # let img = ImageTable::from_bytes(&to_bytes(&t, &AutoOptions::default(), "")?)?;
    /// // `img` holds 10.0.0.0/8 -> "ten" and 10.1.0.0/16 -> "lab".
    /// assert_eq!((img.v4.len(), img.v6.len()), (2, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        self.prefixes.len()
    }

    /// No routes.
    ///
    /// ```
    /// # use ipfib::{engine::auto::AutoOptions, image::{to_bytes, ImageTable}, table::Table};
    /// # let mut t = Table::new();
    /// # t.insert("10.0.0.0/8".parse()?, "ten")?;
    /// # let img = ImageTable::from_bytes(&to_bytes(&t, &AutoOptions::default(), "")?)?;
    /// // `img` holds one IPv4 route and no IPv6 route.
    /// assert!(!img.v4.is_empty() && img.v6.is_empty());
    /// assert_eq!(img.v6.lookup(1), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.prefixes.is_empty()
    }

    /// Distinct values (value slots are `0..values()`).
    ///
    /// ```
    /// use ipfib::engine::auto::AutoOptions;
    /// use ipfib::image::{to_bytes, ImageTable};
    /// use ipfib::table::Table;
    /// let mut t = Table::new();
    /// for (p, v) in [("10.0.0.0/8", "x"), ("11.0.0.0/8", "x"), ("12.0.0.0/8", "y")] {
    ///     t.insert(p.parse()?, v)?;
    /// }
    /// let img = ImageTable::from_bytes(&to_bytes(&t, &AutoOptions::default(), "")?)?;
    /// assert_eq!((img.v4.len(), img.v4.values()), (3, 2)); // equal values share a slot
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn values(&self) -> usize {
        self.ends.len()
    }

    /// The route list in walk order (address, then shorter first).
    ///
    /// ```
    /// # use ipfib::{engine::auto::AutoOptions, image::{to_bytes, ImageTable}, table::Table};
    /// use ipfib::prefix::Prefix;
    /// let mut t = Table::new();
    /// t.insert("10.1.0.0/16".parse()?, "lab")?;
    /// t.insert("10.0.0.0/8".parse()?, "ten")?;
    /// let img = ImageTable::from_bytes(&to_bytes(&t, &AutoOptions::default(), "")?)?;
    /// let want: [Prefix<u32>; 2] = ["10.0.0.0/8".parse()?, "10.1.0.0/16".parse()?];
    /// assert_eq!(img.v4.prefixes(), want); // walk order, not insertion order
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn prefixes(&self) -> &[Prefix<A>] {
        &self.prefixes
    }

    /// Route ordinal -> value slot.
    ///
    /// ```
    /// # use ipfib::{engine::auto::AutoOptions, image::{to_bytes, ImageTable}, table::Table};
    /// let mut t = Table::new();
    /// for (p, v) in [("10.0.0.0/8", "x"), ("11.0.0.0/8", "y"), ("12.0.0.0/8", "x")] {
    ///     t.insert(p.parse()?, v)?;
    /// }
    /// let img = ImageTable::from_bytes(&to_bytes(&t, &AutoOptions::default(), "")?)?;
    /// assert_eq!(img.v4.slots(), [0, 1, 0]); // route ordinal -> value slot
    /// assert_eq!(img.v4.value(img.v4.slots()[1]), Some("y"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn slots(&self) -> &[u32] {
        &self.slots
    }

    /// The engine over value slots.
    ///
    /// ```
    /// # use ipfib::{engine::auto::AutoOptions, image::{to_bytes, ImageTable}, table::Table};
    /// use ipfib::engine::Engine;
    /// let mut t = Table::new();
    /// t.insert("10.0.0.0/8".parse()?, "x")?;
    /// t.insert("10.1.0.0/16".parse()?, "x")?;
    /// let img = ImageTable::from_bytes(&to_bytes(&t, &AutoOptions::default(), "")?)?;
    /// // Both routes have value slot 0: the /16 merges into the /8.
    /// assert_eq!(img.v4.by_value().lookup(0x0a01_0001), 0);
    /// assert_eq!(img.v4.by_value().lookup(0x0a02_0001), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn by_value(&self) -> &AutoEngine<A> {
        &self.by_value
    }

    /// The engine over route ordinals.
    ///
    /// ```
    /// # use ipfib::{engine::auto::AutoOptions, image::{to_bytes, ImageTable}, table::Table};
    /// use ipfib::engine::Engine;
    /// let mut t = Table::new();
    /// t.insert("10.0.0.0/8".parse()?, "x")?;
    /// t.insert("10.1.0.0/16".parse()?, "x")?;
    /// let img = ImageTable::from_bytes(&to_bytes(&t, &AutoOptions::default(), "")?)?;
    /// // Route ordinals tell the two routes apart even with one value.
    /// assert_eq!(img.v4.by_route().lookup(0x0a01_0001), 1); // 10.1.0.0/16
    /// assert_eq!(img.v4.by_route().lookup(0x0a02_0001), 0); // 10.0.0.0/8
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn by_route(&self) -> &AutoEngine<A> {
        &self.by_route
    }

    /// The parts, for a caller that keeps its own snapshot type: (value
    /// engine, route engine, prefixes, value slot per route).
    ///
    /// ```
    /// # use ipfib::{engine::auto::AutoOptions, image::{to_bytes, ImageTable}, table::Table};
    /// use ipfib::engine::Engine;
    /// # let mut t = Table::new();
    /// # t.insert("10.0.0.0/8".parse()?, "ten")?;
    /// # t.insert("10.1.0.0/16".parse()?, "lab")?;
    /// # let img = ImageTable::from_bytes(&to_bytes(&t, &AutoOptions::default(), "")?)?;
    /// // `img` holds 10.0.0.0/8 -> "ten" and 10.1.0.0/16 -> "lab".
    /// let (by_value, by_route, prefixes, slots, values) = img.v4.into_parts();
    /// assert_eq!(values, ["ten", "lab"]);
    /// let route = by_route.lookup(0x0a01_0001) as usize;
    /// assert_eq!((prefixes[route].to_string(), values[slots[route] as usize].as_str()), ("10.1.0.0/16".into(), "lab"));
    /// assert_eq!(values[by_value.lookup(0x0a02_0001) as usize], "ten");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    // Hidden: public only for the Python bindings' snapshot type, which
    // keeps the parts under its own.
    #[doc(hidden)]
    #[allow(clippy::type_complexity)]
    pub fn into_parts(
        self,
    ) -> (
        AutoEngine<A>,
        AutoEngine<A>,
        LookupBuf<Prefix<A>>,
        LookupBuf<u32>,
        Vec<String>,
    ) {
        let values = (0..self.values() as u32)
            .map(|i| self.value(i).unwrap_or_default().to_owned())
            .collect();
        (
            self.by_value,
            self.by_route,
            self.prefixes,
            self.slots,
            values,
        )
    }

    /// Bytes of the mapped structures.
    ///
    /// ```
    /// # use ipfib::{engine::auto::AutoOptions, image::{to_bytes, ImageTable}, table::Table};
    /// use ipfib::prefix::Prefix;
    /// # let mut t = Table::new();
    /// # t.insert("10.0.0.0/8".parse()?, "ten")?;
    /// # t.insert("10.1.0.0/16".parse()?, "lab")?;
    /// # let img = ImageTable::from_bytes(&to_bytes(&t, &AutoOptions::default(), "")?)?;
    /// // `img` holds two IPv4 routes.
    /// let routes = img.v4.len() * std::mem::size_of::<Prefix<u32>>();
    /// assert!(img.v4.footprint_bytes() > routes); // plus engines, slots, value text
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn footprint_bytes(&self) -> usize {
        self.by_value.footprint_bytes()
            + self.by_route.footprint_bytes()
            + std::mem::size_of_val(&self.prefixes[..])
            + self.slots.len() * 4
            + self.ends.len() * 8
            + self.text.len()
    }

    /// Write `t`; returns the names of the two engines built.
    fn save(
        w: &mut Writer,
        t: &RouteTable<A, impl AsRef<str>>,
        opts: &AutoOptions,
    ) -> Result<(String, String), ImageError>
    where
        Prefix<A>: crate::plain::Plain,
    {
        // Value slots renumbered densely, in order of first use.
        let mut dense: HashMap<u32, u32> = HashMap::new();
        let mut texts: Vec<&str> = Vec::new();
        let mut prefixes = Vec::with_capacity(t.len());
        let mut slots = Vec::with_capacity(t.len());
        for (p, vi) in t.iter_indices() {
            let next = dense.len() as u32;
            let slot = *dense.entry(vi).or_insert(next);
            if slot == next {
                let v = t.values().get(vi).map_or("", |v| v.as_ref());
                texts.push(v);
            }
            prefixes.push(p);
            slots.push(slot);
        }
        let build = |payloads: &mut dyn Iterator<Item = (Prefix<A>, u32)>| {
            AutoEngine::build(&compile(payloads), opts)
                .map(AutoEngine::batch_only)
                .map_err(|e| ImageError::Build(e.to_string()))
        };
        let by_value = build(&mut prefixes.iter().copied().zip(slots.iter().copied()))?;
        let by_route = build(&mut prefixes.iter().copied().zip(0..))?;
        let mut ends = Vec::with_capacity(texts.len());
        let mut text = Vec::new();
        for v in &texts {
            text.extend_from_slice(v.as_bytes());
            ends.push(text.len() as u64);
        }
        w.meta(&[u64::from(A::BITS), prefixes.len() as u64, ends.len() as u64]);
        by_value.save(w);
        by_route.save(w);
        w.array(&prefixes);
        w.array(&slots);
        w.array(&ends);
        w.text(&text);
        Ok((by_value.name(), by_route.name()))
    }

    fn read(r: &mut Reader) -> Result<Self, ImageError>
    where
        Prefix<A>: crate::plain::Plain,
    {
        let at = r.offset_of_next();
        let m = r.meta("family header", 3)?;
        if m[0] != u64::from(A::BITS) {
            return Err(invalid(
                at,
                "family header",
                format!("family of {} bits where {} was expected", m[0], A::BITS),
            ));
        }
        // The engines' answers index the values and the routes: bounded by
        // the header's counts, which the lists read below must match.
        let by_value = AutoEngine::load(r, Answers::below(m[2], "values"))?;
        let by_route = AutoEngine::load(r, Answers::below(m[1], "routes"))?;
        let at = r.offset_of_next();
        let prefixes: LookupBuf<Prefix<A>> = r.array("prefixes")?;
        if prefixes.len() as u64 != m[1] {
            return Err(invalid(
                at,
                "prefixes",
                format!("{} routes, the header says {}", prefixes.len(), m[1]),
            ));
        }
        // A branch-free pass first (it vectorises); the position only on
        // failure.
        if !prefixes.iter().fold(true, |ok, p| ok & p.is_well_formed()) {
            let i = prefixes
                .iter()
                .position(|p| !p.is_well_formed())
                .unwrap_or(0);
            return Err(invalid(
                at,
                "prefixes",
                format!("route {i} has a bad length or host bits set"),
            ));
        }
        let at = r.offset_of_next();
        let slots: LookupBuf<u32> = r.array("value slots")?;
        if slots.len() != prefixes.len() {
            return Err(invalid(
                at,
                "value slots",
                format!("{} slots for {} routes", slots.len(), prefixes.len()),
            ));
        }
        let top = slots.iter().fold(0u32, |a, &s| a.max(s));
        if !slots.is_empty() && u64::from(top) >= m[2] {
            let i = slots.iter().position(|&s| s == top).unwrap_or(0);
            return Err(invalid(
                at,
                "value slots",
                format!("route {i} names value {top} of {}", m[2]),
            ));
        }
        let at = r.offset_of_next();
        let ends: LookupBuf<u64> = r.array("value ends")?;
        let text = r.text("value text")?;
        if ends.len() as u64 != m[2] {
            return Err(invalid(
                at,
                "value ends",
                format!("{} values, the header says {}", ends.len(), m[2]),
            ));
        }
        let s = std::str::from_utf8(&text).map_err(|e| invalid(at, "value text", e))?;
        let mut prev = 0u64;
        for (i, &e) in ends.iter().enumerate() {
            if e < prev || e > text.len() as u64 || !s.is_char_boundary(e as usize) {
                return Err(invalid(at, "value ends", format!("value {i} ends at {e}")));
            }
            prev = e;
        }
        Ok(FamilyImage {
            by_value,
            by_route,
            prefixes,
            slots,
            ends,
            text,
        })
    }
}

impl ImageTable {
    /// Longest-prefix match for an address of either family.
    ///
    /// ```
    /// use ipfib::engine::auto::AutoOptions;
    /// use ipfib::image::{to_bytes, ImageTable};
    /// use ipfib::prefix::{AnyAddr, AnyPrefix};
    /// use ipfib::table::Table;
    /// let mut t = Table::new();
    /// t.insert("10.0.0.0/8".parse()?, "ten")?;
    /// t.insert("2001:db8::/32".parse()?, "doc")?;
    /// let img = ImageTable::from_bytes(&to_bytes(&t, &AutoOptions::default(), "")?)?;
    /// let ten: AnyPrefix = "10.0.0.0/8".parse()?;
    /// assert_eq!(img.lookup(AnyAddr::parse("::ffff:10.0.0.1")?), Some((ten, "ten"))); // unmapped
    /// assert_eq!(img.lookup(AnyAddr::parse("2001:db8::1")?).map(|(_, v)| v), Some("doc"));
    /// assert_eq!(img.lookup(AnyAddr::parse("11.0.0.1")?), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lookup(&self, addr: AnyAddr) -> Option<(AnyPrefix, &str)> {
        match addr {
            AnyAddr::V4(a) => self.v4.lookup(a).map(|(p, v)| (p.into(), v)),
            AnyAddr::V6(a) => self.v6.lookup(a).map(|(p, v)| (p.into(), v)),
        }
    }

    /// Bytes of the mapped structures.
    ///
    /// ```
    /// # use ipfib::{engine::auto::AutoOptions, image::{to_bytes, ImageTable}, table::Table};
    /// # let mut t = Table::new();
    /// # t.insert("10.0.0.0/8".parse()?, "ten")?;
    /// # t.insert("2001:db8::/32".parse()?, "doc")?;
    /// # let img = ImageTable::from_bytes(&to_bytes(&t, &AutoOptions::default(), "")?)?;
    /// // `img` holds one route per family.
    /// assert_eq!(img.footprint_bytes(), img.v4.footprint_bytes() + img.v6.footprint_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn footprint_bytes(&self) -> usize {
        self.v4.footprint_bytes() + self.v6.footprint_bytes()
    }

    /// The two families are read (and checked) on two threads: opening
    /// costs the larger of the two, not their sum.
    pub(super) fn read(r: &mut Reader) -> Result<Self, ImageError> {
        let at = r.offset_of_next();
        let source = r.text("source description")?;
        let source = std::str::from_utf8(&source)
            .map_err(|e| invalid(at, "source description", e))?
            .to_owned();
        let m = r.meta("family section counts", 2)?;
        let (n4, n6) = (m[0] as usize, m[1] as usize);
        let r6 = std::sync::Mutex::new(Some(r.split(n4, n6)?));
        let read6 = || {
            let Some(mut r6) = r6.lock().ok().and_then(|mut g| g.take()) else {
                return Err(ImageError::Build("IPv6 reader lost".into()));
            };
            let f = FamilyImage::<u128>::read(&mut r6)?;
            r6.finish()?;
            Ok::<_, ImageError>(f)
        };
        let (v4, v6) = std::thread::scope(|s| {
            // `Scope::spawn` panics when no thread can be made (a process
            // at its thread limit): then the IPv6 family is read here.
            let v6 = std::thread::Builder::new().spawn_scoped(s, read6).ok();
            let v4 = FamilyImage::<u32>::read(r);
            let v6 = match v6 {
                Some(h) => h
                    .join()
                    .unwrap_or_else(|_| Err(ImageError::Build("IPv6 reader panicked".into()))),
                None => read6(),
            };
            (v4, v6)
        });
        Ok(ImageTable {
            v4: v4?,
            v6: v6?,
            source,
        })
    }
}

/// What [`write_table`] wrote.
///
/// ```
/// use ipfib::engine::auto::AutoOptions;
/// use ipfib::image::write_table;
/// use ipfib::table::Table;
/// let dir = std::env::temp_dir().join(format!("ipfib-doc-write-stats-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let mut t = Table::new();
/// t.insert("10.0.0.0/8".parse()?, "ten")?;
/// let stats = write_table(&t, &dir.join("t.ipfib"), &AutoOptions::default(), "doc")?;
/// assert_eq!(stats.bytes, std::fs::metadata(dir.join("t.ipfib"))?.len());
/// assert!(!stats.engines_v4.0.is_empty() && !stats.engines_v6.1.is_empty());
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct WriteStats {
    pub bytes: u64,
    /// The engines chosen, per family: (value engine, route engine).
    pub engines_v4: (String, String),
    pub engines_v6: (String, String),
}

/// The compiled table file of `table` (engines chosen by `opts`), as
/// bytes. `source` is free text kept in the file (e.g. what it was
/// compiled from).
///
/// ```
/// use ipfib::engine::auto::AutoOptions;
/// use ipfib::image::{is_image, to_bytes, ImageTable};
/// use ipfib::table::Table;
/// let mut t = Table::new();
/// t.insert("10.0.0.0/8".parse()?, String::from("ten"))?;
/// let bytes = to_bytes(&t, &AutoOptions::default(), "from a doctest")?;
/// assert!(is_image(&bytes));
/// let img = ImageTable::from_bytes(&bytes)?;
/// assert_eq!((img.source.as_str(), img.v4.len()), ("from a doctest", 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn to_bytes<V: AsRef<str>>(
    table: &Table<V>,
    opts: &AutoOptions,
    source: &str,
) -> Result<Vec<u8>, ImageError> {
    Ok(encode(table, opts, source)?.0)
}

fn encode<V: AsRef<str>>(
    table: &Table<V>,
    opts: &AutoOptions,
    source: &str,
) -> Result<(Vec<u8>, WriteStats), ImageError> {
    let mut w4 = Writer::default();
    let engines_v4 = FamilyImage::save(&mut w4, &table.v4, opts)?;
    let mut w6 = Writer::default();
    let engines_v6 = FamilyImage::save(&mut w6, &table.v6, opts)?;
    let mut w = Writer::default();
    w.text(source.as_bytes());
    w.meta(&[w4.len() as u64, w6.len() as u64]);
    w.append(w4);
    w.append(w6);
    let bytes = w.finish();
    let stats = WriteStats {
        bytes: bytes.len() as u64,
        engines_v4,
        engines_v6,
    };
    Ok((bytes, stats))
}

/// The file a write-then-rename to `path` replaces: `path` itself when it
/// is missing or a regular file, the file a symbolic link leads to (the
/// link stays a link), and an error when `path` is anything else (a
/// device such as `/dev/null`, a FIFO, a socket, a directory) or a link
/// leading nowhere: renaming over those would replace them.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("ipfib-doc-target-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// use ipfib::image::replace_target;
/// assert_eq!(replace_target(&dir.join("new.ipfib"))?, dir.join("new.ipfib"));
/// assert!(replace_target(std::path::Path::new("/dev/null")).is_err());
/// assert!(replace_target(&dir).is_err());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn replace_target(path: &Path) -> std::io::Result<std::path::PathBuf> {
    use std::io::{Error, ErrorKind};
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(path.to_path_buf()),
        Err(e) => return Err(e),
    };
    let target = if meta.file_type().is_symlink() {
        std::fs::canonicalize(path).map_err(|e| {
            Error::new(
                e.kind(),
                format!("{}: a symbolic link leading nowhere ({e})", path.display()),
            )
        })?
    } else {
        path.to_path_buf()
    };
    if std::fs::metadata(&target)?.is_file() {
        Ok(target)
    } else {
        Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "{} exists and is not a regular file (a directory, device, FIFO or socket): \
                 not replaced",
                target.display()
            ),
        ))
    }
}

/// Write the compiled table file of `table` to `path`: into a temporary
/// file beside it, then renamed over `path`, so a reader never maps a
/// half-written file and a failed write leaves nothing behind.
///
/// ```
/// use ipfib::engine::auto::AutoOptions;
/// use ipfib::image::{write_table, ImageTable};
/// use ipfib::prefix::AnyAddr;
/// use ipfib::table::Table;
/// # let dir = std::env::temp_dir().join(format!("ipfib-doc-write-table-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// let mut t = Table::new();
/// t.insert("10.0.0.0/8".parse()?, "ten")?;
/// write_table(&t, &dir.join("t.ipfib"), &AutoOptions::default(), "doc")?;
/// let img = ImageTable::open(&dir.join("t.ipfib"))?;
/// assert_eq!(img.lookup(AnyAddr::V4(0x0a00_0001)).map(|(_, v)| v), Some("ten"));
/// assert_eq!(std::fs::read_dir(&dir)?.count(), 1); // no temporary file left behind
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_table<V: AsRef<str>>(
    table: &Table<V>,
    path: &Path,
    opts: &AutoOptions,
    source: &str,
) -> Result<WriteStats, ImageError> {
    let target = replace_target(path)?;
    let path = target.as_path();
    let (bytes, stats) = encode(table, opts, source)?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // A name no other writer uses (another thread of this process, or a
    // concurrent `ipfib compile`), created exclusively: two writers never
    // share, truncate or rename each other's half-written file.
    // A name already taken (a stale file of a crashed writer whose pid is
    // reused, a writer of another pid namespace on a shared volume) is
    // left alone and the next number tried; only a file this call created
    // is ever removed.
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let (tmp, mut f) = {
        let mut tries = 0;
        loop {
            let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let tmp = dir.join(format!(".{name}.{}.{seq}.tmp", std::process::id()));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)
            {
                Ok(f) => break (tmp, f),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 64 => {
                    tries += 1;
                }
                Err(e) => return Err(e.into()),
            }
        }
    };
    let result = (|| -> std::io::Result<()> {
        f.write_all(&bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(e.into());
    }
    Ok(stats)
}
