//! Python arguments that name an address or a prefix: text, `ipaddress`
//! objects, `int` and packed `bytes`, with the IPv4-mapped rule; and the
//! exact-match refusal of a bare address.

use ipfib::prefix::{AnyAddr, AnyPrefix, HostBits};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;

/// Text of a prefix or address argument: `str`, or anything whose `str()`
/// is one (`ipaddress` objects).
pub(crate) fn text_of(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    match obj.cast::<PyString>() {
        Ok(s) => Ok(s.to_cow()?.into_owned()),
        Err(_) if obj.is_instance_of::<pyo3::types::PyInt>() => Err(PyTypeError::new_err(
            "expected text or an ipaddress object here, not int",
        )),
        Err(_) => Ok(obj.str()?.to_cow()?.into_owned()),
    }
}

pub(crate) fn parse_prefix(obj: &Bound<'_, PyAny>, host_bits: HostBits) -> PyResult<AnyPrefix> {
    let text = text_of(obj)?;
    AnyPrefix::parse(text.trim(), host_bits)
        .map_err(|e| PyValueError::new_err(format!("invalid prefix {text:?}: {e}")))
}

/// A scalar address argument: text or an `ipaddress` object, an `int`
/// (below 2^32 IPv4, as `ipaddress.ip_address` reads it; else IPv6 up to
/// 2^128 - 1) or packed `bytes` (4: IPv4, 16: IPv6, network order); the
/// IPv4-mapped rule applies to every form.
pub(crate) fn parse_addr(obj: &Bound<'_, PyAny>) -> PyResult<AnyAddr> {
    if obj.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err("an address is expected, not a bool"));
    }
    // An int, or an integer-like number (numpy integer scalars: anything
    // with `__index__` that is not text or bytes).
    let index = if obj.is_instance_of::<pyo3::types::PyInt>() {
        Some(obj.clone())
    } else if !obj.is_instance_of::<PyString>()
        && !obj.is_instance_of::<pyo3::types::PyBytes>()
        && obj.hasattr("__index__")?
    {
        Some(obj.call_method0("__index__")?)
    } else {
        None
    };
    if let Some(obj) = index {
        let n: u128 = obj.extract().map_err(|_| {
            PyValueError::new_err(format!(
                "invalid IP address {}: an int address is 0 to 2^128 - 1",
                obj.repr().map(|r| r.to_string()).unwrap_or_default()
            ))
        })?;
        return Ok(match u32::try_from(n) {
            Ok(v4) => AnyAddr::V4(v4),
            Err(_) => AnyAddr::unmapped(std::net::IpAddr::V6(n.into())),
        });
    }
    if let Ok(b) = obj.cast::<pyo3::types::PyBytes>() {
        let bytes = b.as_bytes();
        return if let Ok(v4) = <[u8; 4]>::try_from(bytes) {
            Ok(AnyAddr::V4(u32::from_be_bytes(v4)))
        } else if let Ok(v6) = <[u8; 16]>::try_from(bytes) {
            Ok(AnyAddr::unmapped(std::net::IpAddr::V6(v6.into())))
        } else {
            Err(PyValueError::new_err(format!(
                "invalid IP address: {} bytes (packed addresses are 4 or 16 bytes)",
                bytes.len()
            )))
        };
    }
    let text = text_of(obj)?;
    AnyAddr::parse(&text).map_err(|_| PyValueError::new_err(format!("invalid IP address {text:?}")))
}

/// The prefix of an exact-match argument (`t[p]`, `t.get(p)`); an address
/// without `/LEN` is refused naming `lookup`, so that pytricia's habit
/// (`t[addr]` as a longest-prefix match) fails loudly instead of answering
/// something else.
pub(crate) fn exact_prefix(obj: &Bound<'_, PyAny>, call: &str) -> PyResult<AnyPrefix> {
    // An int or packed bytes can only be an address: say so, with the
    // calls that take one (text_of would only say "not int").
    let number =
        obj.is_instance_of::<pyo3::types::PyInt>() && !obj.is_instance_of::<pyo3::types::PyBool>();
    if number || obj.is_instance_of::<pyo3::types::PyBytes>() {
        let shown = obj.repr()?.to_cow()?.into_owned();
        return Err(match parse_addr(obj) {
            Ok(_) => PyValueError::new_err(format!(
                "{call} is an exact match on a stored prefix, and {shown} is an address: \
                 for its longest-prefix match use t.lookup({shown}) (the value) or \
                 t.lookup_prefix({shown}) (the prefix and value)"
            )),
            Err(_) => PyTypeError::new_err(format!(
                "{call} takes a prefix (text or an ipaddress network), not {shown}"
            )),
        });
    }
    let text = text_of(obj)?;
    if !text.contains('/') && AnyAddr::parse(&text).is_ok() {
        return Err(PyValueError::new_err(format!(
            "{call} is an exact match on a stored prefix, and {text:?} is an address: \
             for its longest-prefix match use t.lookup({text:?}) (the value) or \
             t.lookup_prefix({text:?}) (the prefix and value)"
        )));
    }
    parse_prefix(obj, HostBits::Reject)
}
