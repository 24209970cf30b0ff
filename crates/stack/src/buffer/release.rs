//! Handing freed memory back to the operating system.
//!
//! Freeing a buffer returns it to the C allocator, not to the system:
//! glibc keeps freed chunks in its lists, and gives pages back on its own
//! only from the top of the heap, so after a flood the memory it touched
//! stays resident however much of it is free. `malloc_trim` (a glibc
//! extension) walks the free lists and returns every whole free page
//! (`MADV_DONTNEED`), which is what a long-running host needs after
//! pressure ends. It costs a walk of the allocator's arenas (milliseconds
//! for a large heap), so it is for rare moments, not for the data path.

/// Asks the C allocator to return the free memory it holds to the system;
/// whether any was returned.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn return_free_memory() -> bool {
    // SAFETY: malloc_trim takes no pointers and touches only the
    // allocator's own free lists, under the allocator's locks; Rust's
    // system allocator is this malloc, so it never frees memory Rust still
    // uses.
    unsafe { libc::malloc_trim(0) == 1 }
}

/// Where the allocator has no such call (other than glibc): nothing is
/// returned.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn return_free_memory() -> bool {
    false
}
