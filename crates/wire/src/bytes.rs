//! Big-endian ("network byte order", RFC 1700) fields in byte buffers, shared
//! by every view and option codec of the crate.
//!
//! Every helper takes the buffer and the byte offset where the field starts
//! (write `field::FOO.start` for a field declared as a range).
//!
//! The plain helpers index: they panic if the field runs past the end of the
//! buffer. Call them only where the length has been verified — a view after
//! `check_len`, a setter whose caller checked the buffer size, a slice cut to
//! exactly the field's size — or from the accessors of a `new_unchecked`
//! view, which are documented to panic on a short buffer. The `_or_zero`
//! readers are total instead: bytes past the end of the buffer read as zero
//! (ICMPv6 accessors rely on that).
//!
//! All are `#[inline]`: each is a load or store behind a bounds check, read
//! per field by views that other crates instantiate, where an out-of-line
//! call would cost more than the access and hide a check the caller's
//! earlier length check makes redundant.

use core::net::Ipv6Addr;

/// The `N` bytes at `offset`.
#[inline]
fn array_at<const N: usize>(data: &[u8], offset: usize) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&data[offset..offset + N]);
    out
}

/// The `N` bytes at `offset`, zero where `data` ends before them.
#[inline]
fn array_at_or_zero<const N: usize>(data: &[u8], offset: usize) -> [u8; N] {
    let mut out = [0; N];
    if let Some(available) = data.get(offset..) {
        let n = available.len().min(N);
        out[..n].copy_from_slice(&available[..n]);
    }
    out
}

/// The big-endian `u16` at `offset`. Panics past the end of `data`.
#[inline]
pub(crate) fn be_u16(data: &[u8], offset: usize) -> u16 {
    u16::from_be_bytes(array_at(data, offset))
}

/// The big-endian `u32` at `offset`. Panics past the end of `data`.
#[inline]
pub(crate) fn be_u32(data: &[u8], offset: usize) -> u32 {
    u32::from_be_bytes(array_at(data, offset))
}

/// The IPv6 address in the 16 bytes at `offset`. Panics past the end of
/// `data`.
#[inline]
pub(crate) fn ipv6_at(data: &[u8], offset: usize) -> Ipv6Addr {
    Ipv6Addr::from(array_at::<16>(data, offset))
}

/// The byte at `offset`, or zero past the end of `data`.
#[inline]
pub(crate) fn u8_or_zero(data: &[u8], offset: usize) -> u8 {
    data.get(offset).copied().unwrap_or(0)
}

/// The big-endian `u16` at `offset`, missing bytes read as zero.
#[inline]
pub(crate) fn be_u16_or_zero(data: &[u8], offset: usize) -> u16 {
    u16::from_be_bytes(array_at_or_zero(data, offset))
}

/// The big-endian `u32` at `offset`, missing bytes read as zero.
#[inline]
pub(crate) fn be_u32_or_zero(data: &[u8], offset: usize) -> u32 {
    u32::from_be_bytes(array_at_or_zero(data, offset))
}

/// The IPv6 address at `offset`, missing bytes read as zero.
#[inline]
pub(crate) fn ipv6_at_or_zero(data: &[u8], offset: usize) -> Ipv6Addr {
    Ipv6Addr::from(array_at_or_zero::<16>(data, offset))
}

/// Copies `value` to `offset`. Panics past the end of `data`.
#[inline]
pub(crate) fn put_bytes(data: &mut [u8], offset: usize, value: &[u8]) {
    data[offset..offset + value.len()].copy_from_slice(value);
}

/// Writes `value` big-endian at `offset`. Panics past the end of `data`.
#[inline]
pub(crate) fn put_be_u16(data: &mut [u8], offset: usize, value: u16) {
    put_bytes(data, offset, &value.to_be_bytes());
}

/// Writes `value` big-endian at `offset`. Panics past the end of `data`.
#[inline]
pub(crate) fn put_be_u32(data: &mut [u8], offset: usize, value: u32) {
    put_bytes(data, offset, &value.to_be_bytes());
}

/// Writes the 16 bytes of `addr` at `offset`. Panics past the end of `data`.
#[inline]
pub(crate) fn put_ipv6(data: &mut [u8], offset: usize, addr: Ipv6Addr) {
    put_bytes(data, offset, &addr.octets());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_big_endian() {
        let mut buf = [0u8; 24];
        put_be_u16(&mut buf, 1, 0x1234);
        put_be_u32(&mut buf, 3, 0xdead_beef);
        let addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
        put_ipv6(&mut buf, 8, addr);
        assert_eq!(&buf[..7], &[0, 0x12, 0x34, 0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(be_u16(&buf, 1), 0x1234);
        assert_eq!(be_u32(&buf, 3), 0xdead_beef);
        assert_eq!(ipv6_at(&buf, 8), addr);
        assert_eq!(be_u16_or_zero(&buf, 1), 0x1234);
        assert_eq!(be_u32_or_zero(&buf, 3), 0xdead_beef);
        assert_eq!(ipv6_at_or_zero(&buf, 8), addr);
    }

    #[test]
    fn or_zero_readers_are_total() {
        let buf = [0x12u8, 0x34, 0x56];
        assert_eq!(u8_or_zero(&buf, 3), 0);
        assert_eq!(be_u16_or_zero(&buf, 2), 0x5600);
        assert_eq!(be_u32_or_zero(&buf, 0), 0x1234_5600);
        assert_eq!(be_u32_or_zero(&buf, usize::MAX), 0);
        assert_eq!(
            ipv6_at_or_zero(&buf, 1),
            "3456::".parse::<Ipv6Addr>().unwrap()
        );
    }

    #[test]
    #[should_panic]
    fn plain_readers_panic_past_the_end() {
        be_u32(&[0u8; 3], 0);
    }
}
