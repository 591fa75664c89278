//! `Plain`: the element types an engine array may be read as straight
//! from the bytes of a compiled table file (`crate::image`). A leaf: the
//! engines name it in their key and node bounds, and the file form reads
//! and writes through it.
//!
//! The module is private: `Plain` is public only so that public bounds
//! (`engine::planb::Key`, `engine::poptrie::Stride`) may name it; nothing
//! outside the crate can name or implement it (sealed).

/// Plain data that may be read straight from a file: every bit pattern of
/// its bytes is a valid value, and it holds no pointers.
///
/// # Safety
/// Implement only for `Copy` types whose every byte pattern is valid (all
/// fields integers or arrays of them; padding allowed, since padding bytes
/// are never read as values) and whose alignment is at most 64.
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
        unsafe impl $crate::plain::Plain for $t {
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

#[cfg(test)]
mod tests {
    use super::Plain;

    #[test]
    fn integers_are_written_little_endian() {
        let mut out = Vec::new();
        u32::put(&[0x0a00_0001], &mut out);
        assert_eq!(out, [1, 0, 0, 10]);
        out.clear();
        u64::put(&[1, 2], &mut out);
        assert_eq!(out.len(), 16);
        assert_eq!(out[..2], [1, 0]);
        assert_eq!(out[8..10], [2, 0]);
    }
}
