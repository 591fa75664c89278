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

mod codec;
mod engines;
mod table;

/// Test support (the `testing` feature): public for the workspace's
/// hostile-file tests and fuzz targets, which reseal the files they damage.
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub use codec::reseal;
pub use codec::{ImageError, MAGIC, VERSION};
pub use table::{replace_target, to_bytes, write_table, FamilyImage, ImageTable, WriteStats};

use crate::mem::LookupBuf;
use codec::{Bytes, Reader};
use std::path::Path;

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
