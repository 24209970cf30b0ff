//! Asking for memory ahead of its use: the one place the stack issues a
//! prefetch instruction.

/// Asks for the cache line holding `address` to be brought into the
/// cache, without waiting for it. Any address will do: nothing is read
/// into the program. A no-op off x86_64.
#[inline(always)]
pub(crate) fn prefetch(address: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE, which has the prefetch instruction, is part of
    // x86_64's baseline; a prefetch reads nothing into the program and
    // cannot fault, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(address.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}
