//! Cache prefetch hints. A simulated machine of many CPUs and tasks keeps
//! more state than the host's caches hold, and the state one event touches
//! (a task, a runqueue) is spread over several cache lines that the code
//! reaches one after the other, each a miss that waits for the one before.
//! Asking for all of them at the first touch lets the memory system fetch them
//! together. A hint only: it reads nothing architecturally, so it changes no
//! result.

/// Machines with at least this many CPUs get the hints (`Kernel::prefetch`,
/// which the engine follows too): their runqueues, tasks and per-CPU state
/// exceed a host core's L2 (512 KiB to 2 MiB). On smaller ones everything
/// stays cached and the hints would only add instructions (about a tenth of
/// sleepwake-flat16's).
pub const MIN_CPUS: usize = 256;

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
/// most the value's size). A value aligned to a line takes a fixed number of
/// prefetches, unrolled when `lines` is a constant.
#[inline(always)]
pub fn lines<T>(x: &T, lines: usize) {
    let p = x as *const T as *const u8;
    if std::mem::align_of::<T>() >= 64 {
        #[cfg(target_arch = "x86_64")]
        for i in 0..lines.min(std::mem::size_of::<T>() / 64) {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            // SAFETY: a prefetch is a hint to the cache: it cannot fault,
            // and the address lies inside `*x`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(i * 64) as *const i8) };
        }
    } else {
        range(p, std::mem::size_of::<T>().min(lines.saturating_mul(64)));
    }
}

/// Ask the CPU to fetch every cache line of `*x`.
#[inline(always)]
pub fn all<T>(x: &T) {
    lines(x, usize::MAX);
}
