//! Loading a table file into both families' route tables.

use ipfib::prefix::{AnyPrefix, HostBits};
use ipfib::table::Table;
use ipfib_io::{read_routes, Format, LoadOptions};
use std::path::PathBuf;

/// Table options shared by the commands.
#[derive(clap::Args, Clone, Debug)]
pub struct TableArgs {
    /// Routing table file: text (`PREFIX/LEN VALUE`) or pyasn IPASN;
    /// gzip-compressed files are read transparently.
    #[arg(long)]
    pub table: PathBuf,
    /// File format: auto, text, ipasn (pfx2as and mrt arrive with the MRT reader).
    #[arg(long, default_value = "auto")]
    pub format: String,
    /// Clear host bits (`10.0.0.1/8` becomes `10.0.0.0/8`) instead of
    /// rejecting the line.
    #[arg(long)]
    pub mask_host_bits: bool,
}

/// A loaded table.
pub struct Loaded {
    pub table: Table<String>,
}

/// Read the file and insert its routes in file order (the later duplicate wins).
pub fn load(args: &TableArgs) -> Result<Loaded, Box<dyn std::error::Error>> {
    let format: Format = args.format.parse()?;
    let opts = LoadOptions {
        format,
        host_bits: if args.mask_host_bits {
            HostBits::Mask
        } else {
            HostBits::Reject
        },
    };
    let loaded = read_routes(&args.table, &opts)?;
    let mut table = Table::new();
    for r in loaded.routes {
        table.insert(r.prefix, r.value)?;
    }
    table.compact();
    Ok(Loaded { table })
}

/// Build a table from in-memory routes (the synthetic generators).
pub fn from_routes(
    v4: Vec<(ipfib::prefix::Prefix<u32>, u32)>,
    v6: Vec<(ipfib::prefix::Prefix<u128>, u32)>,
) -> Table<String> {
    let mut t = Table::new();
    for (p, v) in v4 {
        let _ = t.insert(AnyPrefix::V4(p), v.to_string());
    }
    for (p, v) in v6 {
        let _ = t.insert(AnyPrefix::V6(p), v.to_string());
    }
    t.compact();
    t
}
