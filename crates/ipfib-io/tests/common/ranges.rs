//! The ranges tests' independent model pieces.

/// The highest address of a family `bits` wide (32 or 128).
pub fn top(bits: u32) -> u128 {
    if bits == 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    }
}

/// The minimal prefix cover of `[lo, hi]` as `(addr, len)`, by walking
/// the binary trie top-down: a node inside the range is a prefix, a node
/// outside it is nothing, anything else splits in two (the maximal aligned
/// blocks, which no cover by fewer prefixes can beat).
pub fn trie_cover(bits: u32, lo: u128, hi: u128) -> Vec<(u128, u32)> {
    fn walk(bits: u32, addr: u128, len: u32, lo: u128, hi: u128, out: &mut Vec<(u128, u32)>) {
        let host_bits = bits - len;
        let end = if host_bits == 128 {
            u128::MAX
        } else {
            addr + ((1u128 << host_bits) - 1)
        };
        if end < lo || addr > hi {
            return;
        }
        if lo <= addr && end <= hi {
            out.push((addr, len));
            return;
        }
        let half = 1u128 << (bits - len - 1);
        walk(bits, addr, len + 1, lo, hi, out);
        walk(bits, addr + half, len + 1, lo, hi, out);
    }
    let mut out = Vec::new();
    walk(bits, 0, 0, lo, hi, &mut out);
    out
}
