//! Per-entity load tracking (kernel/sched/pelt.c, v4.20+ form; spec §6.1).
//!
//! Time advances in 1024 ns "microseconds" and 1024 us periods; a contribution
//! `p` periods old is weighted `y^p` with `y^32 = 1/2`.

/// `LOAD_AVG_PERIOD`
pub const LOAD_AVG_PERIOD: u64 = 32;
/// `LOAD_AVG_MAX`: the maximum of the series sum(1024 * y^n).
pub const LOAD_AVG_MAX: u64 = 47742;
/// `PELT_MIN_DIVIDER`
pub const PELT_MIN_DIVIDER: u64 = LOAD_AVG_MAX - 1024;
pub const SCHED_CAPACITY_SCALE: u64 = 1024;

/// `runnable_avg_yN_inv[n] = y^n * 2^32` for n in 0..32 (the kernel's table values).
const RUNNABLE_AVG_YN_INV: [u32; 32] = [
    0xffffffff, 0xfa83b2da, 0xf5257d14, 0xefe4b99a, 0xeac0c6e6, 0xe5b906e6, 0xe0ccdeeb, 0xdbfbb796, 0xd744fcc9, 0xd2a81d91, 0xce248c14,
    0xc9b9bd85, 0xc5672a10, 0xc12c4cc9, 0xbd08a39e, 0xb8fbaf46, 0xb504f333, 0xb123f581, 0xad583ee9, 0xa9a15ab4, 0xa5fed6a9, 0xa2704302,
    0x9ef5325f, 0x9b8d39b9, 0x9837f050, 0x94f4efa8, 0x91c3d373, 0x8ea4398a, 0x8b95c1e3, 0x88980e80, 0x85aac367, 0x82cd8698,
];

/// `decay_load(val, n)`: val * y^n.
#[inline]
pub fn decay_load(mut val: u64, mut n: u64) -> u64 {
    if n > LOAD_AVG_PERIOD * 63 {
        return 0;
    }
    if n >= LOAD_AVG_PERIOD {
        val >>= n / LOAD_AVG_PERIOD;
        n %= LOAD_AVG_PERIOD;
    }
    ((val as u128 * RUNNABLE_AVG_YN_INV[n as usize] as u128) >> 32) as u64
}

/// `__accumulate_pelt_segments()`
fn accumulate_pelt_segments(periods: u64, d1: u64, d3: u64) -> u64 {
    let c1 = decay_load(d1, periods);
    let c2 = LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, periods) - 1024;
    c1 + c2 + d3
}

/// `struct sched_avg`. The averages the balancer reads come first (`repr(C)`
/// keeps the order: see [`crate::sched::Rq`]'s layout).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct SchedAvg {
    pub load_avg: u64,
    pub runnable_avg: u64,
    pub util_avg: u64,
    pub last_update_time: u64,
    pub load_sum: u64,
    pub runnable_sum: u64,
    pub util_sum: u64,
    pub period_contrib: u32,
    /// util_est EWMA (tasks only; spec §6.2). `unsigned int` as in the
    /// kernel: a task's utilisation is at most 1024; 32 bits keep the
    /// struct in one 64-byte line (a test checks it).
    pub util_est: u32,
}

impl SchedAvg {
    /// `___update_load_sum()` + `___update_load_avg()`: advance to `now` (ns) with
    /// the given state over the elapsed interval. `load` multiplies the load
    /// contribution (1/0 for a task's `on_rq`, `cfs_rq->load.weight` for a
    /// cfs_rq), `avg_weight` is the factor of `___update_load_avg` (the task's
    /// weight, 1 for a cfs_rq), `runnable` the number of runnable entities and
    /// `running` whether it ran. Returns true when a period boundary was crossed.
    #[inline(always)]
    pub fn update(&mut self, now: u64, load: u64, avg_weight: u64, runnable: u64, running: bool) -> bool {
        if now < self.last_update_time {
            // FIDELITY: the kernel's rq clock never goes backwards; ours cannot either.
            self.last_update_time = now;
            return false;
        }
        let delta = (now - self.last_update_time) >> 10;
        if delta == 0 {
            return false;
        }
        let within = delta + self.period_contrib as u64;
        if within >= 1024 {
            return self.update_periods(delta, load, avg_weight, runnable, running);
        }
        // Inside the current 1024 us period (most updates, a few us apart):
        // what the general form below does when no period ends, inline.
        self.last_update_time += delta << 10;
        self.period_contrib = within as u32;
        self.add_contrib(delta, load, runnable, running);
        false
    }

    /// The sums' share of `contrib` us of the given state (accumulate_sum()'s end).
    #[inline(always)]
    fn add_contrib(&mut self, contrib: u64, load: u64, runnable: u64, running: bool) {
        if load > 0 {
            self.load_sum += load * contrib;
        }
        if runnable > 0 {
            self.runnable_sum += (runnable * contrib) << 10;
        }
        if running {
            self.util_sum += contrib << 10;
        }
    }

    /// [`Self::update`] across at least one period boundary (`delta` > 0 us).
    #[inline(never)]
    fn update_periods(&mut self, mut delta: u64, load: u64, avg_weight: u64, runnable: u64, running: bool) -> bool {
        self.last_update_time += delta << 10;
        // accumulate_sum()
        let mut contrib = delta;
        delta += self.period_contrib as u64;
        let periods = delta / 1024;
        if periods > 0 {
            self.load_sum = decay_load(self.load_sum, periods);
            self.runnable_sum = decay_load(self.runnable_sum, periods);
            self.util_sum = decay_load(self.util_sum, periods);
            delta %= 1024;
            if load > 0 || runnable > 0 || running {
                contrib = accumulate_pelt_segments(periods, 1024 - self.period_contrib as u64, delta);
            }
        }
        self.period_contrib = delta as u32;
        self.add_contrib(contrib, load, runnable, running);
        if periods == 0 {
            return false;
        }
        let divider = PELT_MIN_DIVIDER + self.period_contrib as u64;
        self.load_avg = avg_weight * self.load_sum / divider;
        self.runnable_avg = self.runnable_sum / divider;
        self.util_avg = self.util_sum / divider;
        true
    }

    /// `util_est_update()` on a sleep dequeue (spec §6.2), v6.9+ form
    /// (FASTUP unconditional) when `fastup` is true.
    pub fn util_est_update(&mut self, fastup: bool, capacity: u64) {
        let dequeued = self.util_avg;
        let ewma = self.util_est as u64;
        if fastup && ewma <= dequeued {
            self.util_est = narrow(dequeued);
            return;
        }
        let diff = ewma.abs_diff(dequeued);
        if diff < SCHED_CAPACITY_SCALE / 100 {
            return;
        }
        if dequeued > capacity {
            return;
        }
        if dequeued + 10 < self.runnable_avg {
            return;
        }
        // ewma = ewma - (ewma - dequeued) / 4, in the kernel's shifted arithmetic.
        let e = ewma as i64;
        self.util_est = narrow((e - (e - dequeued as i64) / 4).max(0) as u64);
    }

    /// `task_util_est()`: max(util_avg, util_est).
    pub fn util_est_value(&self) -> u64 {
        self.util_avg.max(self.util_est as u64)
    }
}

/// A task utilisation (at most 1024 by construction) as the 32 bits the
/// kernel's util_est keeps (saturating, never reached).
#[inline]
fn narrow(u: u64) -> u32 {
    u32::try_from(u).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The inline form (no period boundary crossed) leaves the averages
    // exactly as the general form does, over random update sequences.
    #[test]
    fn inline_update_matches_the_general_form() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            x >> 17
        };
        let (mut a, mut b) = (SchedAvg::default(), SchedAvg::default());
        let mut now = 0u64;
        let mut inline = 0;
        for _ in 0..200_000 {
            // Mostly a few us apart, sometimes past a period or several.
            let r = next();
            now += match r % 16 {
                0 => r % 5_000_000,
                1 => 0,
                2 => r % 1024,
                _ => r % 40_000,
            };
            let (load, w, runnable, running) = (next() % 3 * 1024, 1 + next() % 2048, next() % 3, next() % 2 == 1);
            let got = a.update(now, load, w, runnable, running);
            // The general form alone (what `update` was before its inline path).
            let want = if now < b.last_update_time {
                b.last_update_time = now;
                false
            } else {
                let delta = (now - b.last_update_time) >> 10;
                delta > 0 && {
                    inline += (delta + b.period_contrib as u64 >= 1024) as u32 ^ 1;
                    b.update_periods(delta, load, w, runnable, running)
                }
            };
            assert_eq!((got, a), (want, b), "at {now}");
        }
        assert!(inline > 100_000, "the inline form was taken {inline} times");
    }

    #[test]
    fn table_is_y_to_the_n() {
        for (n, &v) in RUNNABLE_AVG_YN_INV.iter().enumerate() {
            let want = (0.5f64.powf(n as f64 / 32.0) * 4294967296.0).min(4294967295.0);
            assert!((v as f64 - want).abs() < 2.0, "entry {n}: {v} vs {want}");
        }
        assert_eq!(decay_load(1024, 32), 511); // the kernel truncates too (y^0 = 0xffffffff)
    }

    const MS: u64 = 1_000_000;

    // spec §6.1: a task always running converges to util ~1024...
    #[test]
    fn always_running_converges_to_1024() {
        let mut sa = SchedAvg::default();
        let mut t = 0;
        while t < 1000 * MS {
            t += MS;
            sa.update(t, 1, 1024, 1, true);
        }
        assert!(sa.util_avg >= 1000 && sa.util_avg <= 1024, "util {}", sa.util_avg);
        assert!(sa.load_avg >= 1000 && sa.load_avg <= 1024, "load {}", sa.load_avg);
    }

    // ...and decays by half in 32 ms (32 periods of 1024 us).
    #[test]
    fn decays_by_half_in_32ms() {
        let mut sa = SchedAvg::default();
        let mut t = 0;
        while t < 1000 * MS {
            t += MS;
            sa.update(t, 1, 1024, 1, true);
        }
        let start = sa.util_avg;
        // 32 PELT periods = 32 * 1024 * 1024 ns.
        let end = t + 32 * 1024 * 1024;
        while t < end {
            t = (t + MS).min(end);
            sa.update(t, 0, 1024, 0, false);
        }
        let half = start / 2;
        assert!(sa.util_avg.abs_diff(half) <= 12, "start {start} after 32ms {}", sa.util_avg);
    }

    #[test]
    fn half_duty_cycle_is_half() {
        let mut sa = SchedAvg::default();
        let mut t = 0;
        for _ in 0..500 {
            t += 2 * MS;
            sa.update(t, 1, 1024, 1, true);
            t += 2 * MS;
            sa.update(t, 0, 1024, 0, false);
        }
        assert!((400..=620).contains(&sa.util_avg), "util {}", sa.util_avg);
    }
}
