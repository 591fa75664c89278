//! The front door: a table file of any format opened the way the CLI, the C
//! ABI and the Python bindings all open one. A compiled table file
//! (`ipfib compile`) is mapped; anything else is loaded leniently, a bad
//! line of a text table being fatal (the text format's contract: an error
//! naming the line), and the [`Report`](crate::Report) says what the load
//! skipped. What differs between the callers on purpose is in [`Options`].

use crate::error::ReadError;
use crate::format::Format;
use crate::options::{TableLoad, TableOptions};
use crate::table::load_table_with_progress;
use ipfib::image::{is_image, ImageTable};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// What to do with a compiled table file.
#[derive(Debug, Clone, Copy)]
pub enum Compiled {
    /// Map it: its engines are in it (`ipfib lookup`, the C ABI, Python's
    /// `Table.from_file` with the automatic engine).
    Map(ipfib::image::OpenOptions),
    /// Read its routes like any other table, without probing for it
    /// (`ipfib info`, Python with another engine asked for).
    Load,
}

/// How [`open`] opens a table file.
#[derive(Debug, Clone)]
pub struct Options {
    /// The format named; `Auto` probes a regular file for the compiled
    /// file magic. Only a regular file is probed: a pipe or a FIFO is
    /// opened once, by the loader (probing it would take its first bytes,
    /// or wait for a writer that has gone).
    pub format: Format,
    /// The loading options, or why the names given make none (the caller's
    /// message). Used only when the file is not mapped: a compiled file
    /// opens whatever they say.
    pub table: Result<TableOptions, String>,
    pub compiled: Compiled,
    /// The first option the caller was given that does not apply to a
    /// compiled file (its routes and values are as compiled), named as
    /// the caller names it: a compiled file is then refused with
    /// [`OpenError::NotForCompiled`] instead of mapped.
    pub not_for_compiled: Option<&'static str>,
    /// Whether a bad line of a line table (text, ipasn, pfx2as) ends the
    /// load with its error (every front end), or is only reported (`ipfib
    /// info`, which shows what is wrong with a file).
    pub line_errors_fatal: bool,
    /// Decompressed bytes read so far, for a progress bar.
    pub progress: Option<Arc<AtomicU64>>,
}

impl Options {
    /// Map a compiled file with the default image options; load anything
    /// else leniently with `table`, a bad text line fatal.
    pub fn new(format: Format, table: Result<TableOptions, String>) -> Self {
        Options {
            format,
            table,
            compiled: Compiled::Map(ipfib::image::OpenOptions::default()),
            not_for_compiled: None,
            line_errors_fatal: true,
            progress: None,
        }
    }
}

/// An opened table file.
// One per open, moved once into the caller's table: the sizes do not
// matter.
#[allow(clippy::large_enum_variant)]
pub enum Opened {
    /// A compiled table file, mapped (or read, per its open options).
    Image(ImageTable),
    /// Any other table file, loaded: its routes and the load's report.
    Table(TableLoad),
}

/// Why a table file could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The file could not be read, a compiled file could not be mapped
    /// ([`ReadError::Image`]), or a line table had a bad line.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// [`Options::table`] was an error.
    #[error("{0}")]
    Options(String),
    /// A compiled file, with an option that does not apply to it.
    #[error("{}: {option} does not apply to a compiled table file", .path.display())]
    NotForCompiled { path: PathBuf, option: &'static str },
}

/// Open the table file at `path`: map it if it is a compiled table file
/// (named `compiled`, or `auto` and starting with the file magic) and
/// [`Options::compiled`] says so, else load it.
pub fn open(path: &Path, opts: &Options) -> Result<Opened, OpenError> {
    if let Compiled::Map(image) = opts.compiled {
        if probe_compiled(path, opts.format)? {
            if let Some(option) = opts.not_for_compiled {
                return Err(OpenError::NotForCompiled {
                    path: path.to_path_buf(),
                    option,
                });
            }
            let table = ImageTable::open_with(path, image).map_err(|source| ReadError::Image {
                path: path.to_path_buf(),
                source,
            })?;
            return Ok(Opened::Image(table));
        }
    }
    let table = opts
        .table
        .as_ref()
        .map_err(|e| OpenError::Options(e.clone()))?;
    let mut loaded = load_table_with_progress(path, table, opts.progress.clone())?;
    if opts.line_errors_fatal
        && loaded.report.format.is_line_table()
        && !loaded.report.errors.is_empty()
    {
        return Err(loaded.report.errors.swap_remove(0).into());
    }
    Ok(Opened::Table(loaded))
}

/// Whether `path` is a compiled table file: `format` is `Compiled`, or
/// `Auto` and the file is a regular file starting with the file magic.
pub fn probe_compiled(path: &Path, format: Format) -> Result<bool, ReadError> {
    match format {
        Format::Compiled => Ok(true),
        Format::Auto => {
            if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
                return Ok(false);
            }
            let mut head = [0u8; 8];
            let n = std::fs::File::open(path)
                .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
                .map_err(|source| ReadError::Io {
                    path: path.to_path_buf(),
                    source,
                })?;
            Ok(is_image(head.get(..n).unwrap_or_default()))
        }
        _ => Ok(false),
    }
}
