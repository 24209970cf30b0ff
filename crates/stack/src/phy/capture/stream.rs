//! Copying a record into the capture ring past the caches.
//!
//! A plain copy of a 1500-byte frame into the ring first reads each of its
//! 24 destination lines into the core's cache (read for ownership),
//! evicting as many lines of the stack's own working set, and the stores
//! then drain behind the copy: the link's *next* transmit ran some 40–60 ns
//! slower with capture on (issue 15's on/off check), a cost no span can
//! hold. Non-temporal stores (`movntdq`) write whole lines through the
//! write-combining buffers straight to memory, neither reading nor
//! allocating the lines; the writer thread, on another core, would have
//! fetched them from there anyway.
//!
//! Records are padded to [`RECORD_ALIGN`] bytes so that every store is one
//! aligned 16-byte store; where the chunk is not 16-aligned (never, with
//! glibc's allocator for chunks this large) or the target is not x86-64,
//! the copy is a plain one.

/// Records start on multiples of this many bytes in a chunk.
pub(super) const RECORD_ALIGN: usize = 16;

/// `len` rounded up to the record alignment.
pub(super) fn padded(len: usize) -> usize {
    len.div_ceil(RECORD_ALIGN) * RECORD_ALIGN
}

/// Appends `pieces`, zero-padded to [`padded`] of their total length
/// `len`, to `chunk`. The caller checked that the chunk has room for
/// `padded(len)` more bytes, so nothing is allocated.
pub(super) fn append_padded<'a>(
    chunk: &mut Vec<u8>,
    pieces: impl IntoIterator<Item = &'a [u8]>,
    len: usize,
) {
    let total = padded(len);
    assert!(
        chunk.capacity() - chunk.len() >= total,
        "the caller checks room"
    );
    #[cfg(target_arch = "x86_64")]
    {
        let spare = chunk.spare_capacity_mut();
        if (spare.as_ptr() as usize).is_multiple_of(RECORD_ALIGN) {
            // SAFETY: `spare` starts 16-aligned and has room for `total`
            // bytes (asserted above), which `stream` writes exactly, every
            // one of them, padding included; so after it the first `total`
            // spare bytes are initialised and the length may cover them.
            unsafe {
                x86_64::stream(spare.as_mut_ptr().cast::<u8>(), pieces);
                chunk.set_len(chunk.len() + total);
            }
            return;
        }
    }
    let end = chunk.len() + total;
    for piece in pieces {
        chunk.extend_from_slice(piece);
    }
    chunk.resize(end, 0);
}

/// Waits until every store before it is in memory and every instruction
/// before it has finished, so that the capture span's closing clock read
/// (an unfenced `rdtsc`, which may otherwise run ahead of them) comes
/// after the copy's whole cost: what the copy leaves draining would be
/// timed in the link's span around it instead (`mfence; lfence`, Intel
/// SDM vol. 2B, RDTSC).
pub(super) fn settle() {
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `lfence` has no preconditions (SSE2, in every x86-64).
    unsafe {
        core::arch::x86_64::_mm_lfence()
    };
}

#[cfg(target_arch = "x86_64")]
mod x86_64 {
    use core::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};

    /// Writes the pieces one after the other from `out`, then zeros up to
    /// the next 16 bytes, with aligned non-temporal 16-byte stores only,
    /// and fences them: when this returns they are in memory, not draining
    /// behind the caller's next instructions.
    ///
    /// # Safety
    ///
    /// `out` is 16-aligned and valid for writes of the pieces' total
    /// length rounded up to 16.
    pub(super) unsafe fn stream<'a>(mut out: *mut u8, pieces: impl IntoIterator<Item = &'a [u8]>) {
        let mut staged = [0u8; 16];
        let mut staged_len = 0;
        // SAFETY (for each store below): `out` stays 16-aligned (it moves
        // by 16) and each store writes 16 of the bytes the caller
        // promised; the loads read 16 bytes of `staged` or of a piece
        // whose remaining length is at least 16.
        let store = |out: &mut *mut u8, from: *const u8| unsafe {
            _mm_stream_si128(
                out.cast::<__m128i>(),
                _mm_loadu_si128(from.cast::<__m128i>()),
            );
            *out = out.add(16);
        };
        for piece in pieces {
            let mut rest = piece;
            if staged_len > 0 {
                let take = (16 - staged_len).min(rest.len());
                staged[staged_len..staged_len + take].copy_from_slice(&rest[..take]);
                staged_len += take;
                rest = &rest[take..];
                if staged_len < 16 {
                    continue;
                }
                store(&mut out, staged.as_ptr());
            }
            while rest.len() >= 16 {
                store(&mut out, rest.as_ptr());
                rest = &rest[16..];
            }
            staged[..rest.len()].copy_from_slice(rest);
            staged_len = rest.len();
        }
        if staged_len > 0 {
            staged[staged_len..].fill(0);
            store(&mut out, staged.as_ptr());
        }
        // Non-temporal stores are weakly ordered: the fence makes them
        // visible before the chunk can be handed to the writer thread.
        // SAFETY: `sfence` has no preconditions (SSE, in every x86-64).
        unsafe { _mm_sfence() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every split of a frame into pieces, at every offset within an
    /// aligned chunk and after a misaligned start, gives the bytes back in
    /// order followed by zeros up to the padded length.
    #[test]
    fn pieces_arrive_whole_and_padded() {
        let frame: Vec<u8> = (0..100u8).map(|b| b.wrapping_mul(37) | 1).collect();
        for cut_a in [0, 1, 7, 15, 16, 17, 40] {
            for cut_b in [cut_a, cut_a + 3, cut_a + 16, 99] {
                let cut_b = cut_b.max(cut_a).min(frame.len());
                let pieces = [&frame[..cut_a], &frame[cut_a..cut_b], &frame[cut_b..]];
                for lead in [0usize, 16, 48] {
                    let mut chunk = Vec::with_capacity(4096);
                    chunk.resize(lead, 0xee);
                    append_padded(&mut chunk, pieces, frame.len());
                    assert_eq!(chunk.len(), lead + 112, "cuts {cut_a} {cut_b}");
                    assert_eq!(&chunk[lead..lead + 100], &frame[..]);
                    assert!(chunk[lead + 100..].iter().all(|&b| b == 0));
                }
            }
        }
    }

    /// A chunk whose free space starts off the alignment takes the plain
    /// copy, with the same result.
    #[test]
    fn a_misaligned_chunk_gets_a_plain_copy() {
        let mut chunk = Vec::with_capacity(256);
        chunk.push(9);
        append_padded(&mut chunk, [&b"abc"[..], b"defghijklmnopqrstu"], 21);
        assert_eq!(chunk.len(), 1 + 32);
        assert_eq!(&chunk[1..22], b"abcdefghijklmnopqrstu");
        assert!(chunk[22..].iter().all(|&b| b == 0));
    }

    #[test]
    fn padding_rounds_up_to_sixteen() {
        assert_eq!(
            [0, 1, 15, 16, 17, 1514 + 13].map(padded),
            [0, 16, 16, 16, 32, 1536]
        );
    }
}
