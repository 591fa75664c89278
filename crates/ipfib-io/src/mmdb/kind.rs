//! The data section's field types (MaxMind DB spec, "Output Data Section"),
//! shared by the reader and the writer (`mmdb_write`).
pub(crate) const POINTER: u8 = 1;
pub(crate) const STRING: u8 = 2;
pub(crate) const DOUBLE: u8 = 3;
pub(crate) const BYTES: u8 = 4;
pub(crate) const UINT16: u8 = 5;
pub(crate) const UINT32: u8 = 6;
pub(crate) const MAP: u8 = 7;
pub(crate) const INT32: u8 = 8;
pub(crate) const UINT64: u8 = 9;
pub(crate) const UINT128: u8 = 10;
pub(crate) const ARRAY: u8 = 11;
pub(crate) const BOOLEAN: u8 = 14;
pub(crate) const FLOAT: u8 = 15;
