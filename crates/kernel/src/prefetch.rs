//! Cache prefetch hints. A simulated machine of many CPUs and tasks keeps
//! more state than the host's caches hold, and the state one event touches
//! (a task, a runqueue) is spread over several cache lines that the code
//! reaches one after the other, each a miss that waits for the one before.
//! Asking for all of them at the first touch lets the memory system fetch them
//! together. A hint only: it reads nothing architecturally, so it changes no
//! result.

/// Ask the CPU to fetch the cache lines of the `bytes` bytes from `p` on.
#[inline(always)]
pub fn range(p: *const u8, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let start = p as usize & !63;
        let end = (p as usize).wrapping_add(bytes);
        let mut a = start;
        while a < end {
            // SAFETY: a prefetch is a hint to the cache: it reads nothing
            // architecturally and cannot fault, whatever the address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(a as *const i8) };
            a += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, bytes);
}

/// Ask the CPU to fetch the first `lines` 64-byte cache lines of `*x` (at
/// most the value's size).
#[inline(always)]
pub fn lines<T>(x: &T, lines: usize) {
    range(x as *const T as *const u8, std::mem::size_of::<T>().min(lines.saturating_mul(64)));
}

/// Ask the CPU to fetch every cache line of `*x`.
#[inline(always)]
pub fn all<T>(x: &T) {
    range(x as *const T as *const u8, std::mem::size_of::<T>());
}
