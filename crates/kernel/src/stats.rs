//! schedstat counters as the kernel keeps them (kernel/sched/stats.c,
//! Documentation/scheduler/sched-stats.rst; ecosystem reference §2), summed
//! per domain level. The /proc/schedstat text (writer and reader) is in
//! `crate::schedstat`.

/// Per-CPU rows of per-domain-level values in one allocation: row `c` holds
/// CPU `c`'s levels (parallel to `SchedDomains::per_cpu[c]`). `x[c][k]` reads
/// as a `Vec<Vec<T>>` would, without the per-CPU heap block: a wakeup's
/// counter update touches the row's line and the (small, hot) row starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerCpuLevels<T> {
    data: Vec<T>,
    /// Row `c` is `data[start[c]..start[c + 1]]`.
    start: Vec<u32>,
}

impl<T: Clone> PerCpuLevels<T> {
    /// Rows of the given lengths, every value `v`.
    pub fn new(lens: impl IntoIterator<Item = usize>, v: T) -> Self {
        let mut start = vec![0u32];
        for n in lens {
            start.push(start.last().copied().unwrap_or(0) + n as u32);
        }
        let total = *start.last().unwrap_or(&0) as usize;
        PerCpuLevels { data: vec![v; total], start }
    }
}

impl<T> PerCpuLevels<T> {
    /// The given rows, in one allocation.
    pub fn from_rows(rows: Vec<Vec<T>>) -> Self {
        let mut start = Vec::with_capacity(rows.len() + 1);
        start.push(0u32);
        let mut data = Vec::with_capacity(rows.iter().map(Vec::len).sum());
        for r in rows {
            data.extend(r);
            start.push(data.len() as u32);
        }
        PerCpuLevels { data, start }
    }

    /// Row `c`, if there is one.
    pub fn get(&self, c: usize) -> Option<&[T]> {
        (c < self.len()).then(|| &self[c])
    }

    /// Number of rows (CPUs).
    pub fn len(&self) -> usize {
        self.start.len() - 1
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
        &self.data[self.start[c] as usize..self.start[c + 1] as usize]
    }
}

impl<T> std::ops::IndexMut<usize> for PerCpuLevels<T> {
    #[inline]
    fn index_mut(&mut self, c: usize) -> &mut [T] {
        &mut self.data[self.start[c] as usize..self.start[c + 1] as usize]
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
