//! The `ipfib` Python package's native module, `ipfib._ipfib`.
//!
//! ```text
//!  Table.from_file / from_prefixes / from_pandas
//!     │  load.rs (ipfib-io, errors with file and line)   value.rs (int / str / object values)
//!     ▼
//!  live.rs: route table (Mutex) ──compile──► snapshot.rs: one engine per family
//!           insert / remove republish        (planb | poptrie | radix) behind arc-swap
//!     ▼
//!  table.rs: scalar lookups, mapping protocol, pickling, info()
//!  mmdb.rs: Table.to_mmdb — values to MaxMind DB records, ipfib_io::mmdb_write
//!  many.rs + batch.rs: lookup_many — classify the input (numpy, list,
//!           Arrow buffers), release the GIL, split by family, batch lookups,
//!           write integers or value slots, then objects / masks / lengths
//!
//!  Rib.from_mrt (rib.rs): an ipfib_rib::Rib loaded from an MRT RIB dump
//!     │  lookup / routes / peers: routes as dicts (the HTTP API's JSON keys)
//!     ▼
//!  rib_many.rs: Rib.lookup_many — the same inputs as Table's, the RIB's
//!           batch lookups without the GIL (grouped by per-address next hop
//!           when given), one numpy array per field
//! ```
//!
//! Pure-Python parts (input normalisation for pandas and pyarrow, the
//! unpickle hook) live in `python/ipfib/`.

mod args;
mod batch;
mod live;
mod load;
mod many;
mod mmdb;
mod rib;
mod rib_many;
mod rpki;
mod snapshot;
mod table;
mod value;

use pyo3::prelude::*;

#[pymodule]
fn _ipfib(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<table::Table>()?;
    m.add_class::<rib::Rib>()?;
    m.add_class::<rpki::Vrps>()?;
    m.add("TableFileError", m.py().get_type::<load::TableFileError>())?;
    m.add(
        "DamagedTableWarning",
        m.py().get_type::<load::DamagedTableWarning>(),
    )?;
    Ok(())
}
