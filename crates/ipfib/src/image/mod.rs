//! Compiled table files: a built table written once (`ipfib compile`) and
//! opened memory-mapped, so a process answers its first lookup a few
//! milliseconds after start, and every process on the machine that opens
//! the same file shares one copy of it through the page cache.
//!
//! The lookup structures (engine arrays, the route list, the value text)
//! are used where they lie in the mapping: [`LookupBuf`]s borrow them, so
//! nothing is parsed or copied on open. What is checked instead, before any
//! lookup can run:
//! - the header: magic, version, byte order, file length, checksums of the
//!   header and of the section table;
//! - every section: inside the file, aligned, a whole number of elements,
//!   and (by default) its xxh3 checksum;
//! - every engine: its `validate`, the check its unchecked reads rely on
//!   (the same one the tests and fuzz targets run after every build and
//!   in-place update), so a hostile file that passes the checksums still
//!   cannot make a lookup read out of bounds, and with it that every answer
//!   an engine can give is below the route count (the route engine) or the
//!   value count (the value engine), since callers index with them;
//! - the routes: each prefix well-formed (length within the family, no host
//!   bits), each value slot inside the value table, each value valid UTF-8.
//!
//! The layout is documented in `docs/architecture.md` ("Compiled table
//! files"); [`VERSION`] changes whenever it does, and a file of another
//! version is refused with a message naming both.

mod table;

pub use table::{replace_target, to_bytes, write_table, FamilyImage, ImageTable, WriteStats};

use crate::mem::LookupBuf;
use std::fmt;
use std::path::Path;
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

/// Plain data that may be read straight from a file: every bit pattern of
/// its bytes is a valid value, and it holds no pointers.
///
/// # Safety
/// Implement only for `Copy` types whose every byte pattern is valid (all
/// fields integers or arrays of them; padding allowed, since padding bytes
/// are never read as values) and whose alignment is at most 64.
///
/// ```
/// use ipfib::image::Plain;
/// use ipfib::prefix::Prefix;
/// let mut out = Vec::new();
/// u32::put(&[0x0a00_0001], &mut out);
/// assert_eq!(out, [1, 0, 0, 10]); // little-endian
/// out.clear();
/// Prefix::<u32>::put(&["10.0.0.0/8".parse()?], &mut out);
/// assert_eq!(out, [0, 0, 0, 10, 8, 0, 0, 0]); // address, length, zeroed padding
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe trait Plain: Copy + Send + Sync + 'static {
    /// Append `items` as their little-endian in-memory bytes, padding
    /// bytes written as zero.
    fn put(items: &[Self], out: &mut Vec<u8>);
}

/// `Plain::put` for types without padding: their bytes as they are.
macro_rules! plain_bytes {
    ($($t:ty),*) => {$(
        // SAFETY: integers (or arrays / repr(C) structs of them, without
        // padding): every bit pattern is valid; alignment <= 64.
        unsafe impl $crate::image::Plain for $t {
            fn put(items: &[Self], out: &mut Vec<u8>) {
                // SAFETY: no padding, so every byte is initialised; the
                // slice covers exactly the items.
                let bytes = unsafe {
                    std::slice::from_raw_parts(
                        items.as_ptr() as *const u8,
                        std::mem::size_of_val(items),
                    )
                };
                out.extend_from_slice(bytes);
            }
        }
    )*};
}
pub(crate) use plain_bytes;
plain_bytes!(u8, u32, u64, u128);

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
    fn finish(self) -> Vec<u8> {
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
    fn new(bytes: Bytes, verify: bool) -> Result<Self, ImageError> {
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

/// `engine` as loaded from offset `at`, once its structural check passes,
/// every answer below `answers` included (every engine's `load` ends
/// here: nothing unchecked is ever searched, and no answer indexes past
/// the list it names).
pub(crate) fn validated<E: crate::engine::Engine<A>, A: crate::addr::Addr>(
    at: u64,
    what: &str,
    engine: E,
    answers: Answers,
) -> Result<E, ImageError> {
    match engine.validate_below(answers.below) {
        Ok(()) => Ok(engine),
        Err(why) => Err(invalid(
            at,
            &format!("{what} (answers index {} {})", answers.below, answers.of),
            why,
        )),
    }
}

/// How to open a file.
///
/// ```
/// use ipfib::engine::auto::AutoOptions;
/// use ipfib::image::{to_bytes, ImageTable, OpenOptions};
/// use ipfib::table::Table;
/// let mut t = Table::new();
/// t.insert("10.0.0.0/8".parse()?, "ten-value")?;
/// let mut bytes = to_bytes(&t, &AutoOptions::default(), "")?;
/// let at = bytes.windows(3).position(|w| w == b"ten").expect("value text");
/// bytes[at..at + 3].copy_from_slice(b"TEN"); // damage the value text
/// assert!(ImageTable::from_bytes(&bytes).is_err()); // section checksum
/// let unchecked = OpenOptions { verify_checksums: false, ..OpenOptions::default() };
/// let img = ImageTable::from_bytes_with(&bytes, unchecked)?; // structurally sound
/// assert_eq!(img.v4.lookup(0x0a00_0001).map(|(_, v)| v), Some("TEN-value"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct OpenOptions {
    /// Verify every section's checksum (default). Without it, opening
    /// touches only the pages the structural checks read; the structural
    /// checks always run, so a damaged file can give wrong answers but
    /// never an out-of-bounds read.
    pub verify_checksums: bool,
    /// Map the file (default): shared with every process through the page
    /// cache, opened in milliseconds. The file must then never be rewritten
    /// in place while open (`cp` or `curl -o` over it, `rsync --inplace`):
    /// the checked structures would change under the lookups. Replace it by
    /// renaming a new file over it, as `ipfib compile` does. `false` reads
    /// the file into memory instead: a private copy, immune to that.
    pub map: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            verify_checksums: true,
            map: true,
        }
    }
}

fn open_bytes(path: &Path, map: bool) -> Result<Bytes, ImageError> {
    if !map {
        let bytes = std::fs::read(path)?;
        return Ok(Bytes::Owned(LookupBuf::from_slice(&bytes)));
    }
    let file = std::fs::File::open(path)?;
    // SAFETY: the mapping is read-only; the file's contents are validated
    // before use. Another process truncating or rewriting the file in place
    // while it is mapped is outside what Rust can guard against (a
    // truncation raises SIGBUS; a rewrite changes checked structures under
    // unchecked reads): `ipfib compile` never does it (it writes a new file
    // and renames it over the old), `OpenOptions::map` and every user-facing
    // doc (`Table.open`, the README, docs/architecture.md) say to do the
    // same, and `map: false` reads a private copy for those who cannot.
    let map = unsafe { memmap2::MmapOptions::new().populate().map(&file) };
    match map {
        Ok(m) => Ok(Bytes::Mapped(m)),
        // Empty files cannot be mapped; let the header check name them.
        Err(_) if file.metadata().map(|m| m.len() == 0).unwrap_or(false) => {
            Ok(Bytes::Owned(LookupBuf::from_slice(&[])))
        }
        Err(e) => Err(e.into()),
    }
}

impl ImageTable {
    /// Open the compiled table file at `path`, memory-mapped.
    ///
    /// ```
    /// use ipfib::engine::auto::AutoOptions;
    /// use ipfib::image::{write_table, ImageError, ImageTable};
    /// use ipfib::table::Table;
    /// let path = std::env::temp_dir().join(format!("ipfib-doc-open-{}.ipfib", std::process::id()));
    /// let mut t = Table::new();
    /// t.insert("10.0.0.0/8".parse()?, "ten")?;
    /// write_table(&t, &path, &AutoOptions::default(), "")?;
    /// let img = ImageTable::open(&path)?; // memory-mapped
    /// assert_eq!(img.v4.lookup(0x0a00_0001).map(|(_, v)| v), Some("ten"));
    /// std::fs::remove_file(&path)?;
    /// assert!(matches!(ImageTable::open(&path), Err(ImageError::Io(_))));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: &Path) -> Result<Self, ImageError> {
        Self::open_with(path, OpenOptions::default())
    }

    /// [`ImageTable::open`] with options.
    ///
    /// ```
    /// use ipfib::engine::auto::AutoOptions;
    /// use ipfib::image::{write_table, ImageTable, OpenOptions};
    /// use ipfib::table::Table;
    /// let path = std::env::temp_dir().join(format!("ipfib-doc-open-with-{}.ipfib", std::process::id()));
    /// let mut t = Table::new();
    /// t.insert("2001:db8::/32".parse()?, "doc")?;
    /// write_table(&t, &path, &AutoOptions::default(), "")?;
    /// // A private copy: safe even if the file is later rewritten in place.
    /// let img = ImageTable::open_with(&path, OpenOptions { map: false, ..OpenOptions::default() })?;
    /// std::fs::remove_file(&path)?;
    /// assert_eq!(img.v6.lookup(0x2001_0db8 << 96).map(|(_, v)| v), Some("doc"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_with(path: &Path, opts: OpenOptions) -> Result<Self, ImageError> {
        let bytes = open_bytes(path, opts.map)?;
        let mut r = Reader::new(bytes, opts.verify_checksums)?;
        let t = ImageTable::read(&mut r)?;
        r.finish()?;
        Ok(t)
    }

    /// Open a compiled table held in memory (copied once, aligned).
    ///
    /// ```
    /// use ipfib::engine::auto::AutoOptions;
    /// use ipfib::image::{to_bytes, ImageError, ImageTable};
    /// use ipfib::table::Table;
    /// let mut t = Table::new();
    /// t.insert("10.0.0.0/8".parse()?, "ten")?;
    /// let mut shifted = vec![0u8]; // the file's bytes at an odd address
    /// shifted.extend(to_bytes(&t, &AutoOptions::default(), "")?);
    /// let img = ImageTable::from_bytes(&shifted[1..])?; // fine: copied, aligned
    /// assert_eq!(img.v4.lookup(0x0a00_0001).map(|(_, v)| v), Some("ten"));
    /// assert!(matches!(ImageTable::from_bytes(&[]), Err(ImageError::NotAnImage)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ImageError> {
        Self::from_bytes_with(bytes, OpenOptions::default())
    }

    /// [`ImageTable::from_bytes`] with options.
    ///
    /// ```
    /// use ipfib::engine::auto::AutoOptions;
    /// use ipfib::image::{to_bytes, ImageError, ImageTable, OpenOptions};
    /// use ipfib::table::Table;
    /// let bytes = to_bytes(&Table::<&str>::new(), &AutoOptions::default(), "")?;
    /// let unchecked = OpenOptions { verify_checksums: false, ..OpenOptions::default() };
    /// // Structural checks always run: a truncated file is refused either way.
    /// let err = ImageTable::from_bytes_with(&bytes[..bytes.len() - 1], unchecked).err();
    /// assert!(matches!(err, Some(ImageError::Corrupt { .. })));
    /// assert!(ImageTable::from_bytes_with(&bytes, unchecked)?.v4.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_bytes_with(bytes: &[u8], opts: OpenOptions) -> Result<Self, ImageError> {
        let mut r = Reader::new(
            Bytes::Owned(LookupBuf::from_slice(bytes)),
            opts.verify_checksums,
        )?;
        let t = ImageTable::read(&mut r)?;
        r.finish()?;
        Ok(t)
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
#[doc(hidden)]
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

/// Whether `head` (a file's first bytes) starts like a compiled table file.
///
/// ```
/// use ipfib::image::{is_image, MAGIC};
/// assert!(is_image(&MAGIC));
/// assert!(!is_image(b"10.0.0.0/8 ten\n")); // a text table
/// assert!(!is_image(&MAGIC[..4])); // too short to tell
/// ```
pub fn is_image(head: &[u8]) -> bool {
    head.starts_with(&MAGIC)
}
