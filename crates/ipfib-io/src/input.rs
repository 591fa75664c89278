//! Opening a file with transparent decompression, chosen by magic bytes
//! (never by file name): gzip is decoded, plain files are read as they are,
//! and other compressions we recognise are refused by name.

use crate::error::ReadError;
use flate2::read::MultiGzDecoder;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;

/// Buffer size between the file (or the gzip decoder) and the line reader.
const BUFFER_BYTES: usize = 256 * 1024;

/// Magic bytes of the compressions we know; only gzip is decoded so far.
const MAGICS: [(&[u8], &str); 4] = [
    (&[0x1f, 0x8b], "gzip"),
    (b"BZh", "bzip2"),
    (&[0x28, 0xb5, 0x2f, 0xfd], "zstd"),
    (&[0xfd, b'7', b'z', b'X', b'Z', 0x00], "xz"),
];

/// How the bytes of an input are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compression {
    None,
    Gzip,
}

/// An opened input: decompressed lines, and how they were stored.
pub(crate) struct Input {
    pub reader: Box<dyn BufRead + Send>,
    pub compression: Compression,
}

/// Open `path` for reading lines, decompressing gzip (detected by its magic
/// bytes `1f 8b`, concatenated members included) and reading anything else
/// as it is.
///
/// Errors: [`ReadError::Io`] if the file cannot be opened or its first bytes
/// read (missing, permission, a directory);
/// [`ReadError::UnsupportedCompression`] for bzip2, zstd or xz input. Errors
/// later in a damaged gzip stream surface as `io::Error`s from the reader.
pub fn open_maybe_compressed(path: &Path) -> Result<Box<dyn BufRead + Send>, ReadError> {
    open_input(path).map(|input| input.reader)
}

pub(crate) fn open_input(path: &Path) -> Result<Input, ReadError> {
    let io_error = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(io_error)?;
    // Read the magic through `read_to_end` so short reads and EINTR are
    // handled, then put the bytes back in front of the rest of the file.
    let mut head = Vec::with_capacity(8);
    (&mut file)
        .take(8)
        .read_to_end(&mut head)
        .map_err(io_error)?;
    let compression = MAGICS
        .iter()
        .find(|(magic, _)| head.starts_with(magic))
        .map(|(_, name)| *name);
    let stream = Cursor::new(head).chain(file);
    match compression {
        None => Ok(Input {
            reader: Box::new(BufReader::with_capacity(BUFFER_BYTES, stream)),
            compression: Compression::None,
        }),
        Some("gzip") => Ok(Input {
            reader: Box::new(BufReader::with_capacity(
                BUFFER_BYTES,
                MultiGzDecoder::new(stream),
            )),
            compression: Compression::Gzip,
        }),
        Some(other) => Err(ReadError::UnsupportedCompression {
            path: path.to_path_buf(),
            compression: other,
        }),
    }
}

/// Read one line (up to and including `\n`) into `buf`, which is cleared
/// first; `Ok(false)` at the end of the input. (`read_until` itself retries
/// on `Interrupted`.)
#[inline]
pub(crate) fn next_line<R: BufRead + ?Sized>(
    reader: &mut R,
    buf: &mut Vec<u8>,
) -> io::Result<bool> {
    buf.clear();
    reader.read_until(b'\n', buf).map(|n| n > 0)
}
