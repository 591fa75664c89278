//! The section format of compiled table files: the header, the section
//! table, sections written ([`Writer`]) and taken back in order, borrowed
//! in place ([`Reader`]), and the errors a file is refused with. It knows
//! nothing of engines: `image::engines` writes and reads them through it.

use crate::mem::LookupBuf;
use crate::plain::Plain;
use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

/// The first eight bytes of every compiled table file.
///
/// ```
/// use ipfib::engine::auto::AutoOptions;
/// use ipfib::image::{to_bytes, MAGIC};
/// use ipfib::table::Table;
/// let bytes = to_bytes(&Table::<&str>::new(), &AutoOptions::default(), "")?;
/// assert!(bytes.starts_with(&MAGIC));
/// assert_eq!(&MAGIC, b"IPFIBTBL");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const MAGIC: [u8; 8] = *b"IPFIBTBL";
/// The layout version this build writes and reads.
///
/// ```
/// use ipfib::engine::auto::AutoOptions;
/// use ipfib::image::{to_bytes, ImageError, ImageTable, VERSION};
/// use ipfib::table::Table;
/// let mut bytes = to_bytes(&Table::<&str>::new(), &AutoOptions::default(), "")?;
/// assert_eq!(bytes[8..12], VERSION.to_le_bytes()); // right after the magic
/// bytes[8..12].copy_from_slice(&(VERSION + 1).to_le_bytes());
/// let err = ImageTable::from_bytes(&bytes).err().expect("refused");
/// assert!(matches!(err, ImageError::Version { found } if found == VERSION + 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const VERSION: u32 = 1;
/// Written as a native `u32`: reads back as this only on a little-endian
/// machine (the layout is little-endian).
const BYTE_ORDER: u32 = 0x0102_0304;
const HEADER_BYTES: usize = 64;
const ENTRY_BYTES: usize = 32;
/// Section alignment: a cache line (`Line` needs 64; every type needs less).
const ALIGN: usize = 64;
/// Most sections a file may declare (a table writes fewer than 100).
const MAX_SECTIONS: u32 = 4096;

/// Why a compiled table file could not be written or opened.
///
/// ```
/// use ipfib::engine::auto::AutoOptions;
/// use ipfib::image::{to_bytes, ImageError, ImageTable};
/// use ipfib::table::Table;
/// let err = ImageTable::from_bytes(b"10.0.0.0/8 ten\n").err().expect("refused");
/// assert!(matches!(err, ImageError::NotAnImage));
/// let mut bytes = to_bytes(&Table::<&str>::new(), &AutoOptions::default(), "")?;
/// bytes.push(0); // one byte more than the header says
/// let err = ImageTable::from_bytes(&bytes).err().expect("refused");
/// assert!(matches!(err, ImageError::Corrupt { .. }), "{err}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub enum ImageError {
    /// Reading, mapping or writing the file failed.
    Io(std::io::Error),
    /// Not a compiled table file (wrong magic).
    NotAnImage,
    /// A compiled table file of another layout version.
    Version { found: u32 },
    /// Written on a machine of the other byte order.
    ByteOrder,
    /// Damaged or hostile: what is wrong and at which byte offset.
    Corrupt { offset: u64, what: String },
    /// The table cannot be written (e.g. an engine build failed).
    Build(String),
}

impl ImageError {
    fn corrupt(offset: u64, what: impl Into<String>) -> Self {
        ImageError::Corrupt {
            offset,
            what: what.into(),
        }
    }
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImageError::Io(e) => write!(f, "{e}"),
            ImageError::NotAnImage => write!(f, "not an ipfib compiled table file (bad magic)"),
            ImageError::Version { found } => write!(
                f,
                "compiled table file of layout version {found}; this ipfib reads version {VERSION} (compile the table again)"
            ),
            ImageError::ByteOrder => write!(
                f,
                "compiled table file of the other byte order (the layout is little-endian)"
            ),
            ImageError::Corrupt { offset, what } => {
                write!(f, "damaged compiled table file at byte {offset}: {what}")
            }
            ImageError::Build(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ImageError {}

impl From<std::io::Error> for ImageError {
    fn from(e: std::io::Error) -> Self {
        ImageError::Io(e)
    }
}

/// What a section holds: checked against what the reader expects next, so
/// a file whose sections are out of order is refused by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Tag {
    /// Scalars of the structure that follows (`u64`s).
    Meta = 1,
    /// UTF-8 text (reasons, value bytes).
    Text = 2,
    /// An engine or route array.
    Array = 3,
}

fn checksum(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// Builds a file: sections in the order the reader takes them back.
#[derive(Default)]
pub(crate) struct Writer {
    /// (tag, element size, bytes).
    sections: Vec<(Tag, u32, Vec<u8>)>,
}

impl Writer {
    /// An array of plain elements.
    pub fn array<T: Plain>(&mut self, items: &[T]) {
        let mut bytes = Vec::with_capacity(std::mem::size_of_val(items));
        T::put(items, &mut bytes);
        self.sections
            .push((Tag::Array, std::mem::size_of::<T>() as u32, bytes));
    }

    /// Scalars.
    pub fn meta(&mut self, values: &[u64]) {
        let mut bytes = Vec::with_capacity(values.len() * 8);
        u64::put(values, &mut bytes);
        self.sections.push((Tag::Meta, 8, bytes));
    }

    /// Text.
    pub fn text(&mut self, text: &[u8]) {
        self.sections.push((Tag::Text, 1, text.to_vec()));
    }

    /// Sections written so far.
    pub fn len(&self) -> usize {
        self.sections.len()
    }

    /// Append `other`'s sections after these.
    pub fn append(&mut self, other: Writer) {
        self.sections.extend(other.sections);
    }

    /// The whole file.
    pub(super) fn finish(self) -> Vec<u8> {
        let n = self.sections.len();
        let table_end = HEADER_BYTES + n * ENTRY_BYTES;
        let mut offset = table_end.next_multiple_of(ALIGN);
        let mut table = Vec::with_capacity(n * ENTRY_BYTES);
        for (tag, elem, bytes) in &self.sections {
            table.extend_from_slice(&(*tag as u32).to_le_bytes());
            table.extend_from_slice(&elem.to_le_bytes());
            table.extend_from_slice(&(offset as u64).to_le_bytes());
            table.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            table.extend_from_slice(&checksum(bytes).to_le_bytes());
            offset = (offset + bytes.len()).next_multiple_of(ALIGN);
        }
        let file_len = offset;
        let mut out = Vec::with_capacity(file_len);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&BYTE_ORDER.to_le_bytes());
        out.extend_from_slice(&(file_len as u64).to_le_bytes());
        out.extend_from_slice(&(n as u32).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(HEADER_BYTES as u64).to_le_bytes());
        out.extend_from_slice(&checksum(&table).to_le_bytes());
        out.extend_from_slice(&[0; 8]);
        let h = checksum(&out);
        out.extend_from_slice(&h.to_le_bytes());
        out.extend_from_slice(&table);
        for (_, _, bytes) in &self.sections {
            out.resize(out.len().next_multiple_of(ALIGN), 0);
            out.extend_from_slice(bytes);
        }
        out.resize(file_len, 0);
        out
    }
}

/// The bytes of an opened file: a read-only mapping, or (for files that
/// cannot be mapped, and in tests) an aligned copy.
pub(crate) enum Bytes {
    Mapped(memmap2::Mmap),
    Owned(LookupBuf<u8>),
}

impl Bytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(b) => b,
        }
    }
}

/// One section as the table declares it.
#[derive(Clone, Copy, Debug)]
struct Entry {
    tag: u32,
    elem: u32,
    offset: u64,
    len: u64,
    sum: u64,
    /// Where the entry itself is (for messages).
    at: u64,
}

/// Hands out an opened file's sections in order, borrowed in place.
pub(crate) struct Reader {
    bytes: Arc<Bytes>,
    entries: Vec<Entry>,
    next: usize,
    /// Check each section's checksum as it is taken (so the two families'
    /// sections are checked on their two threads).
    verify: bool,
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]))
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]))
}

impl Reader {
    /// Check the header and section table of `bytes` (and each section's
    /// checksum when `verify`).
    pub(super) fn new(bytes: Bytes, verify: bool) -> Result<Self, ImageError> {
        let b = bytes.as_slice();
        if b.len() < MAGIC.len() || b[..MAGIC.len()] != MAGIC {
            return Err(ImageError::NotAnImage);
        }
        if b.len() < HEADER_BYTES {
            return Err(ImageError::corrupt(
                b.len() as u64,
                format!("truncated header ({} of {HEADER_BYTES} bytes)", b.len()),
            ));
        }
        let version = le_u32(b, 8);
        if version != VERSION {
            return Err(ImageError::Version { found: version });
        }
        if u32::from_ne_bytes(b[12..16].try_into().unwrap_or([0; 4])) != BYTE_ORDER {
            return Err(ImageError::ByteOrder);
        }
        if checksum(&b[..56]) != le_u64(b, 56) {
            return Err(ImageError::corrupt(56, "header checksum mismatch"));
        }
        let file_len = le_u64(b, 16);
        if file_len != b.len() as u64 {
            return Err(ImageError::corrupt(
                b.len() as u64,
                format!(
                    "file is {} bytes, its header says {file_len} (truncated or extended)",
                    b.len()
                ),
            ));
        }
        let n = le_u32(b, 24);
        let table_at = le_u64(b, 32);
        if n > MAX_SECTIONS || table_at != HEADER_BYTES as u64 {
            return Err(ImageError::corrupt(
                24,
                format!("{n} sections at offset {table_at}"),
            ));
        }
        let table_end = HEADER_BYTES + n as usize * ENTRY_BYTES;
        let Some(table) = b.get(HEADER_BYTES..table_end) else {
            return Err(ImageError::corrupt(
                b.len() as u64,
                "section table past the end of the file",
            ));
        };
        if checksum(table) != le_u64(b, 40) {
            return Err(ImageError::corrupt(40, "section table checksum mismatch"));
        }
        let mut entries = Vec::with_capacity(n as usize);
        let mut end_prev = table_end as u64;
        for (i, e) in table.chunks_exact(ENTRY_BYTES).enumerate() {
            let at = (HEADER_BYTES + i * ENTRY_BYTES) as u64;
            let entry = Entry {
                tag: le_u32(e, 0),
                elem: le_u32(e, 4),
                offset: le_u64(e, 8),
                len: le_u64(e, 16),
                sum: le_u64(e, 24),
                at,
            };
            let end = entry.offset.checked_add(entry.len);
            let bad = |what: String| Err(ImageError::corrupt(at, format!("section {i}: {what}")));
            match end {
                None => return bad("length overflows".into()),
                Some(end) if end > b.len() as u64 => {
                    return bad(format!(
                        "bytes {}..{end} past the end of the file ({} bytes)",
                        entry.offset,
                        b.len()
                    ))
                }
                _ => {}
            }
            if !entry.offset.is_multiple_of(ALIGN as u64) || entry.offset < end_prev {
                return bad(format!(
                    "offset {} unaligned or overlapping the previous section",
                    entry.offset
                ));
            }
            if entry.elem == 0 || !entry.len.is_multiple_of(u64::from(entry.elem)) {
                return bad(format!(
                    "{} bytes is not a whole number of {}-byte elements",
                    entry.len, entry.elem
                ));
            }
            // Alignment padding is zero, so no byte of the file goes
            // unchecked.
            if let Some(i) = b[end_prev as usize..entry.offset as usize]
                .iter()
                .position(|&x| x != 0)
            {
                return Err(ImageError::corrupt(end_prev + i as u64, "non-zero padding"));
            }
            end_prev = entry.offset + entry.len;
            entries.push(entry);
        }
        if let Some(i) = b[end_prev as usize..].iter().position(|&x| x != 0) {
            return Err(ImageError::corrupt(end_prev + i as u64, "non-zero padding"));
        }
        Ok(Reader {
            bytes: Arc::new(bytes),
            entries,
            next: 0,
            verify,
        })
    }

    /// The next section, which must be a `tag` of `elem`-byte elements.
    fn take(&mut self, tag: Tag, elem: usize, what: &str) -> Result<Entry, ImageError> {
        let i = self.next;
        let Some(&e) = self.entries.get(i) else {
            let end = self.bytes.as_slice().len() as u64;
            return Err(ImageError::corrupt(
                end,
                format!(
                    "missing section {i} ({what}): the file has {}",
                    self.entries.len()
                ),
            ));
        };
        if e.tag != tag as u32 || e.elem as usize != elem {
            return Err(ImageError::corrupt(
                e.at,
                format!(
                    "section {i}: expected {what} ({tag:?} of {elem}-byte elements), found tag {} of {}-byte elements",
                    e.tag, e.elem
                ),
            ));
        }
        if self.verify {
            let b = self.bytes.as_slice();
            // In bounds: checked in `Reader::new`.
            if checksum(&b[e.offset as usize..(e.offset + e.len) as usize]) != e.sum {
                return Err(ImageError::corrupt(
                    e.offset,
                    format!("section {i} ({what}): checksum mismatch"),
                ));
            }
        }
        self.next += 1;
        Ok(e)
    }

    /// The next section as an array of `T`, borrowed in place.
    pub fn array<T: Plain>(&mut self, what: &str) -> Result<LookupBuf<T>, ImageError> {
        let e = self.take(Tag::Array, std::mem::size_of::<T>(), what)?;
        let len = (e.len / e.elem as u64) as usize;
        if len == 0 {
            return Ok(LookupBuf::from_slice(&[]));
        }
        let base = self.bytes.as_slice().as_ptr();
        // In bounds: `Reader::new` checked offset + len <= file length.
        let ptr = base.wrapping_add(e.offset as usize) as *mut T;
        if !(ptr as usize).is_multiple_of(std::mem::align_of::<T>()) {
            return Err(ImageError::corrupt(e.offset, format!("{what}: misaligned")));
        }
        let Some(ptr) = NonNull::new(ptr) else {
            return Err(ImageError::corrupt(e.offset, "null section"));
        };
        let owner: Arc<dyn Send + Sync> = self.bytes.clone();
        // SAFETY: `ptr` is aligned for T (checked above) and the section's
        // `len` elements lie inside the mapping (checked in `Reader::new`),
        // which `owner` keeps alive; the mapping is read-only (or an owned
        // copy nothing writes); `T: Plain`, so any bytes are a valid `T`.
        Ok(unsafe { LookupBuf::borrowed(ptr, len, owner) })
    }

    /// The next section as scalars.
    pub fn meta(&mut self, what: &str, want: usize) -> Result<Vec<u64>, ImageError> {
        let e = self.take(Tag::Meta, 8, what)?;
        let b = &self.bytes.as_slice()[e.offset as usize..(e.offset + e.len) as usize];
        let v: Vec<u64> = b.chunks_exact(8).map(|c| le_u64(c, 0)).collect();
        if v.len() != want {
            return Err(ImageError::corrupt(
                e.at,
                format!("{what}: {} scalars, expected {want}", v.len()),
            ));
        }
        Ok(v)
    }

    /// The next section as text bytes, borrowed in place.
    pub fn text(&mut self, what: &str) -> Result<LookupBuf<u8>, ImageError> {
        let e = self.take(Tag::Text, 1, what)?;
        let base = self.bytes.as_slice().as_ptr();
        let len = e.len as usize;
        if len == 0 {
            return Ok(LookupBuf::from_slice(&[]));
        }
        let Some(ptr) = NonNull::new(base.wrapping_add(e.offset as usize) as *mut u8) else {
            return Err(ImageError::corrupt(e.offset, "null section"));
        };
        let owner: Arc<dyn Send + Sync> = self.bytes.clone();
        // SAFETY: as in `array`, for bytes (alignment 1).
        Ok(unsafe { LookupBuf::borrowed(ptr, len, owner) })
    }

    /// Where the next section's entry is (for messages about its content).
    pub fn offset_of_next(&self) -> u64 {
        self.entries
            .get(self.next)
            .map_or(self.bytes.as_slice().len() as u64, |e| e.offset)
    }

    /// A reader of the `n` sections after the next `skip` ones (a part read
    /// on another thread); this one then ends after those `skip`.
    pub fn split(&mut self, skip: usize, n: usize) -> Result<Reader, ImageError> {
        // `skip` and `n` come from the file: checked arithmetic throughout.
        let range = self
            .next
            .checked_add(skip)
            .and_then(|from| Some((from, from.checked_add(n)?)))
            .filter(|&(_, end)| end <= self.entries.len());
        let Some((from, end)) = range else {
            let from = self.next.saturating_add(skip);
            let at = self.offset_of_next();
            return Err(ImageError::corrupt(
                at,
                format!(
                    "{n} sections from section {from}: the file has {}",
                    self.entries.len()
                ),
            ));
        };
        let part = Reader {
            bytes: Arc::clone(&self.bytes),
            entries: self.entries[from..end].to_vec(),
            next: 0,
            verify: self.verify,
        };
        self.entries.drain(from..end);
        Ok(part)
    }

    /// Every section was taken.
    pub(crate) fn finish(&self) -> Result<(), ImageError> {
        if self.next != self.entries.len() {
            let e = self.entries[self.next];
            return Err(ImageError::corrupt(
                e.at,
                format!(
                    "{} sections left over after the table",
                    self.entries.len() - self.next
                ),
            ));
        }
        Ok(())
    }
}

/// A corrupt-file error for a structure that failed its check; `at` is
/// the offset of the structure's first section.
pub(crate) fn invalid(at: u64, what: &str, why: impl fmt::Display) -> ImageError {
    ImageError::corrupt(at, format!("{what}: {why}"))
}

/// What a stored engine's answers index, for the bound its check
/// applies: a family's routes (the route engine) or its values (the value
/// engine). Callers index those lists with the answers (the route list,
/// `classify`'s per-route counters, the C ABI's `route_index`), so a file
/// whose engine answers past them is refused on open.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Answers {
    /// Every answer is `NO_ROUTE` or below this.
    pub below: u32,
    /// What the answers index ("routes", "values"), for messages.
    pub of: &'static str,
}

impl Answers {
    /// Answers below `count` (as the file's family header gives it; a
    /// count past `u32` bounds nothing here, and is refused later when
    /// the list it counts is read).
    pub fn below(count: u64, of: &'static str) -> Self {
        Answers {
            below: u32::try_from(count).unwrap_or(crate::engine::NO_ROUTE),
            of,
        }
    }
}

/// Recompute every checksum of a compiled table file in place (section,
/// table, header), so that fuzzing and tests can reach the structural
/// checks behind them with damaged content. Bytes that do not hold a
/// whole header and section table are left as they are.
///
/// ```
/// use ipfib::engine::auto::AutoOptions;
/// use ipfib::image::{reseal, to_bytes, ImageTable};
/// use ipfib::table::Table;
/// let mut t = Table::new();
/// t.insert("10.0.0.0/8".parse()?, "ten")?;
/// let mut bytes = to_bytes(&t, &AutoOptions::default(), "")?;
/// let at = bytes.windows(3).position(|w| w == b"ten").expect("value text");
/// bytes[at] = b'T';
/// assert!(ImageTable::from_bytes(&bytes).is_err()); // checksum mismatch
/// reseal(&mut bytes); // now only the structural checks stand in the way
/// assert_eq!(ImageTable::from_bytes(&bytes)?.v4.lookup(0x0a00_0001).map(|(_, v)| v), Some("Ten"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(any(test, feature = "testing"))]
pub fn reseal(b: &mut [u8]) {
    if b.len() < HEADER_BYTES {
        return;
    }
    let n = (le_u32(b, 24) as usize).min(MAX_SECTIONS as usize);
    let table_end = HEADER_BYTES + n * ENTRY_BYTES;
    if b.len() < table_end {
        return;
    }
    for i in 0..n {
        let at = HEADER_BYTES + i * ENTRY_BYTES;
        let (off, len) = (le_u64(b, at + 8), le_u64(b, at + 16));
        let end = off.checked_add(len).filter(|&e| e <= b.len() as u64);
        if let Some(end) = end {
            let sum = checksum(&b[off as usize..end as usize]);
            b[at + 24..at + 32].copy_from_slice(&sum.to_le_bytes());
        }
    }
    let sum = checksum(&b[HEADER_BYTES..table_end]);
    b[40..48].copy_from_slice(&sum.to_le_bytes());
    let sum = checksum(&b[..56]);
    b[56..64].copy_from_slice(&sum.to_le_bytes());
}
