//! schedstat counters as the kernel keeps them (kernel/sched/stats.c,
//! Documentation/scheduler/sched-stats.rst; ecosystem reference §2), summed
//! per domain level. The /proc/schedstat text (writer and reader) is in
//! `crate::schedstat`.

/// Per-CPU rows of per-domain-level values in one allocation: row `c` holds
/// CPU `c`'s levels (parallel to `SchedDomains::per_cpu[c]`). `x[c][k]` reads
/// as a `Vec<Vec<T>>` would, without the per-CPU heap block: a wakeup's
/// counter update touches the row's line and the (small, hot) row bounds.
/// The row bounds are padded to a power of two rows (empty ones) and looked
/// up by a mask, not a bounds test (as [`crate::maskvec::MaskVec`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerCpuLevels<T> {
    data: Vec<T>,
    /// Row `c` is `data[rows[c].0..rows[c].1]`; `n` rows, then empty ones
    /// at the end of `data` up to a power of two (`mask + 1` in all).
    rows: Vec<(u32, u32)>,
    n: usize,
    mask: usize,
}

impl<T: Clone> PerCpuLevels<T> {
    /// Rows of the given lengths, every value `v`.
    pub fn new(lens: impl IntoIterator<Item = usize>, v: T) -> Self {
        let lens: Vec<usize> = lens.into_iter().collect();
        let total = lens.iter().sum();
        Self::with_rows(vec![v; total], &lens)
    }
}

impl<T> PerCpuLevels<T> {
    /// `data` cut into rows of the given lengths (summing to its length).
    fn with_rows(data: Vec<T>, lens: &[usize]) -> Self {
        let n = lens.len();
        let size = n.next_power_of_two();
        let mut rows = Vec::with_capacity(size);
        let mut at = 0u32;
        for &l in lens {
            rows.push((at, at + l as u32));
            at += l as u32;
        }
        assert_eq!(at as usize, data.len(), "rows cover the data");
        rows.resize(size, (at, at));
        PerCpuLevels { data, rows, n, mask: size - 1 }
    }

    /// The given rows, in one allocation.
    pub fn from_rows(rows: Vec<Vec<T>>) -> Self {
        let lens: Vec<usize> = rows.iter().map(Vec::len).collect();
        let mut data = Vec::with_capacity(lens.iter().sum());
        for r in rows {
            data.extend(r);
        }
        Self::with_rows(data, &lens)
    }

    /// Row `c`, if there is one.
    pub fn get(&self, c: usize) -> Option<&[T]> {
        (c < self.len()).then(|| &self[c])
    }

    /// Number of rows (CPUs).
    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rows in CPU order.
    pub fn iter(&self) -> impl Iterator<Item = &[T]> {
        (0..self.len()).map(move |c| &self[c])
    }
}

impl<T> std::ops::Index<usize> for PerCpuLevels<T> {
    type Output = [T];
    #[inline]
    fn index(&self, c: usize) -> &[T] {
        debug_assert!(c < self.n, "row {c} of {}", self.n);
        // SAFETY: `rows` has `mask + 1` entries (`with_rows`), each with
        // start <= end <= `data.len()`; neither vector changes afterwards.
        unsafe {
            let (a, b) = *self.rows.get_unchecked(c & self.mask);
            self.data.get_unchecked(a as usize..b as usize)
        }
    }
}

impl<T> std::ops::IndexMut<usize> for PerCpuLevels<T> {
    #[inline]
    fn index_mut(&mut self, c: usize) -> &mut [T] {
        debug_assert!(c < self.n, "row {c} of {}", self.n);
        // SAFETY: as in `index`.
        unsafe {
            let (a, b) = *self.rows.get_unchecked(c & self.mask);
            self.data.get_unchecked_mut(a as usize..b as usize)
        }
    }
}

/// Per-CPU, per-domain counters (`struct sched_domain` schedstat fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SdStats {
    /// Wakeups by this CPU whose target first shares this domain with it.
    pub ttwu_wake_remote: u64,
    /// wake_affine() pulled the wakee to this CPU with this domain as affine_sd.
    pub ttwu_move_affine: u64,
    /// Wakeups balanced through SD_BALANCE_WAKE (unused with default flags).
    pub ttwu_move_balance: u64,
    /// Active balancing pushed a running task to this CPU at this level.
    pub alb_pushed: u64,
    /// active_load_balance_cpu_stop() runs for this CPU at this level.
    pub alb_count: u64,
    /// ... that found no task to move.
    pub alb_failed: u64,
}

pub use crate::schedstat::LevelStats;

/// Per-LLC shared state (`struct sched_domain_shared`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LlcShared {
    pub has_idle_cores: bool,
    /// SIS_UTIL scan budget (v6.0+).
    pub nr_idle_scan: u32,
    /// When update_idle_cpu_scan() may next run for this LLC (ns).
    pub next_scan_update: u64,
}

/// Load-balancing counters of one idle type (issue: load balancing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LbStats {
    pub lb_count: u64,
    pub lb_balanced: u64,
    pub lb_failed: u64,
    pub lb_gained: u64,
    pub lb_nobusyq: u64,
}

#[cfg(test)]
mod per_cpu_levels_tests {
    use super::PerCpuLevels;

    #[test]
    fn rows_index_like_nested_vectors() {
        let mut x = PerCpuLevels::new([2usize, 0, 3], 0u32);
        assert_eq!((x.len(), x[0].len(), x[1].len(), x[2].len()), (3, 2, 0, 3));
        x[2][1] += 5;
        x[0][1] = 7;
        assert_eq!((&x[0][..], &x[2][..]), (&[0, 7][..], &[0, 5, 0][..]));
        assert!(!x.is_empty() && PerCpuLevels::new(Vec::<usize>::new(), 0u8).is_empty());
        assert_eq!(x.iter().map(|r| r.len()).collect::<Vec<_>>(), [2, 0, 3]);
        let y = PerCpuLevels::from_rows(vec![vec![4u32, 5], vec![], vec![6]]);
        assert_eq!((y.len(), &y[0][..], &y[1][..], &y[2][..]), (3, &[4, 5][..], &[][..], &[6][..]));
        assert_eq!((y.get(2), y.get(3)), (Some(&[6u32][..]), None));
    }
}
