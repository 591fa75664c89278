//! Opening a file with transparent decompression, chosen by magic bytes
//! (never by file name): gzip, bzip2 and zstd are decoded (concatenated
//! members / streams / frames included), plain files are read as they are,
//! and xz is refused by name.

use crate::error::ReadError;
use bzip2::read::MultiBzDecoder;
use flate2::read::MultiGzDecoder;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Buffer size between the file (or the decoder) and the readers.
const BUFFER_BYTES: usize = 256 * 1024;

/// How the bytes of an input are stored, by magic bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    #[default]
    None,
    Gzip,
    Bzip2,
    Zstd,
}

impl Compression {
    /// The name used in messages.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "uncompressed",
            Compression::Gzip => "gzip",
            Compression::Bzip2 => "bzip2",
            Compression::Zstd => "zstd",
        }
    }
}

const MAGICS: [(&[u8], Result<Compression, &str>); 4] = [
    (&[0x1f, 0x8b], Ok(Compression::Gzip)),
    (b"BZh", Ok(Compression::Bzip2)),
    (&[0x28, 0xb5, 0x2f, 0xfd], Ok(Compression::Zstd)),
    (&[0xfd, b'7', b'z', b'X', b'Z', 0x00], Err("xz")),
];

/// An opened input: decompressed bytes, and how they were stored.
pub(crate) struct Input {
    pub reader: Box<dyn BufRead + Send>,
    pub compression: Compression,
}

/// Open `path` for reading, decompressing gzip, bzip2 and zstd (detected by
/// their magic bytes) and reading anything else as it is.
///
/// Errors: [`ReadError::Io`] if the file cannot be opened or its first bytes
/// read (missing, permission, a directory);
/// [`ReadError::UnsupportedCompression`] for xz input. Errors later in a
/// damaged stream surface as `io::Error`s from the reader, after every byte
/// that decoded before the damage.
///
/// ```
/// # use ipfib_io::{open_maybe_compressed, ReadError};
/// # use std::io::BufRead;
/// let path = std::env::temp_dir().join(format!("ipfib-doc-open-{}.txt", std::process::id()));
/// std::fs::write(&path, "10.0.0.0/8 a\n")?;
/// let first = open_maybe_compressed(&path)?.lines().next().transpose()?;
/// std::fs::remove_file(&path)?;
/// assert_eq!(first.as_deref(), Some("10.0.0.0/8 a"));
/// let missing = open_maybe_compressed(&path).err();
/// assert!(matches!(missing, Some(ReadError::Io { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn open_maybe_compressed(path: &Path) -> Result<Box<dyn BufRead + Send>, ReadError> {
    open_input(path, None).map(|input| input.reader)
}

/// Open `path`; when `progress` is given, it counts the file's (compressed)
/// bytes read so far, for a progress bar.
pub(crate) fn open_input(
    path: &Path,
    progress: Option<Arc<AtomicU64>>,
) -> Result<Input, ReadError> {
    let io_error = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io_error)?;
    let mut file = Counted {
        inner: file,
        count: progress,
    };
    // Read the magic through `read_to_end` so short reads and EINTR are
    // handled, then put the bytes back in front of the rest of the file.
    let mut head = Vec::with_capacity(8);
    (&mut file)
        .take(8)
        .read_to_end(&mut head)
        .map_err(io_error)?;
    let compression = match MAGICS.iter().find(|(magic, _)| head.starts_with(magic)) {
        None => Compression::None,
        Some((_, Ok(c))) => *c,
        Some((_, Err(name))) => {
            return Err(ReadError::UnsupportedCompression {
                path: path.to_path_buf(),
                compression: name,
            })
        }
    };
    let stream = Cursor::new(head).chain(file);
    Ok(Input {
        reader: decoder(stream, compression),
        compression,
    })
}

/// A buffered reader of `stream` decoded as `compression`.
pub(crate) fn decoder<R: Read + Send + 'static>(
    stream: R,
    compression: Compression,
) -> Box<dyn BufRead + Send> {
    let buffered = |r: Box<dyn Read + Send>| -> Box<dyn BufRead + Send> {
        Box::new(BufReader::with_capacity(BUFFER_BYTES, r))
    };
    match compression {
        Compression::None => buffered(Box::new(stream)),
        Compression::Gzip => buffered(Box::new(MultiGzDecoder::new(stream))),
        Compression::Bzip2 => buffered(Box::new(MultiBzDecoder::new(stream))),
        Compression::Zstd => buffered(Box::new(ZstdFrames::new(stream))),
    }
}

/// Counts the bytes read through it into a shared counter.
struct Counted<R> {
    inner: R,
    count: Option<Arc<AtomicU64>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(c) = &self.count {
            c.fetch_add(n as u64, Ordering::Relaxed);
        }
        Ok(n)
    }
}

type ZstdDecoder<R> = ruzstd::decoding::StreamingDecoder<R, ruzstd::decoding::FrameDecoder>;

/// Concatenated zstd frames as one stream (ruzstd's decoder reads one frame).
/// A frame that does not start or decode is an `io::Error`.
struct ZstdFrames<R: Read> {
    state: ZstdState<R>,
}

enum ZstdState<R: Read> {
    /// Between frames: the source, positioned at the next frame (or its end).
    Between(BufReader<R>),
    InFrame(Box<ZstdDecoder<BufReader<R>>>),
    Done,
}

impl<R: Read> ZstdFrames<R> {
    fn new(source: R) -> Self {
        ZstdFrames {
            state: ZstdState::Between(BufReader::new(source)),
        }
    }
}

impl<R: Read> Read for ZstdFrames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match std::mem::replace(&mut self.state, ZstdState::Done) {
                ZstdState::Done => return Ok(0),
                ZstdState::Between(mut source) => {
                    if source.fill_buf()?.is_empty() {
                        return Ok(0);
                    }
                    let frame = ZstdDecoder::new(source).map_err(io::Error::other)?;
                    self.state = ZstdState::InFrame(Box::new(frame));
                }
                ZstdState::InFrame(mut frame) => {
                    let n = frame.read(buf)?;
                    if n > 0 || buf.is_empty() {
                        self.state = ZstdState::InFrame(frame);
                        return Ok(n);
                    }
                    self.state = ZstdState::Between(frame.into_inner());
                }
            }
        }
    }
}

/// The longest line a text reader accepts: no table line comes near it,
/// and it bounds the memory a stream without newlines (binary garbage) can
/// take.
pub const MAX_LINE_BYTES: u64 = 64 * 1024;

/// Read one line (up to and including `\n`) into `buf`, which is cleared
/// first; `Ok(false)` at the end of the input. A line whose text (without
/// its `\n`) is longer than [`MAX_LINE_BYTES`] is an `InvalidData` error,
/// whether or not a newline ends it. (`read_until` itself retries on
/// `Interrupted`.)
#[inline]
pub(crate) fn next_line<R: BufRead + ?Sized>(
    reader: &mut R,
    buf: &mut Vec<u8>,
) -> io::Result<bool> {
    buf.clear();
    let n = reader.take(MAX_LINE_BYTES + 1).read_until(b'\n', buf)?;
    if n as u64 > MAX_LINE_BYTES && buf.last() != Some(&b'\n') {
        return Err(io::Error::new(io::ErrorKind::InvalidData, LineTooLong));
    }
    Ok(n > 0)
}

/// The error [`next_line`] gives for an over-long line.
#[derive(Debug)]
pub(crate) struct LineTooLong;

impl std::fmt::Display for LineTooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line longer than {MAX_LINE_BYTES} bytes")
    }
}

impl std::error::Error for LineTooLong {}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line's text may be exactly `MAX_LINE_BYTES` long, with or without
    /// a newline after it; one byte more is an error either way.
    #[test]
    fn the_line_bound_is_on_the_text_with_or_without_a_newline() {
        let max = MAX_LINE_BYTES as usize;
        for (len, newline, ok) in [
            (max, true, true),
            (max, false, true),
            (max + 1, true, false),
            (max + 1, false, false),
        ] {
            let mut data = vec![b'a'; len];
            if newline {
                data.push(b'\n');
            }
            let mut reader = io::Cursor::new(data);
            let mut buf = Vec::new();
            let got = next_line(&mut reader, &mut buf);
            assert_eq!(got.is_ok(), ok, "{len} bytes, newline {newline}: {got:?}");
        }
    }
}
