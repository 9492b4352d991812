//! schedstat counters as the kernel keeps them (kernel/sched/stats.c,
//! Documentation/scheduler/sched-stats.rst; ecosystem reference §2) and the
//! /proc/schedstat version 17 text.

use crate::core::Kernel;
use schedlab_topology::CpuId;
use std::fmt::Write;

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

/// One domain level's schedstat summed over CPUs (and idle types for lb_*).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LevelStats {
    pub name: &'static str,
    pub ttwu_wake_remote: u64,
    pub ttwu_move_affine: u64,
    pub lb_count: u64,
    pub lb_balanced: u64,
    pub lb_failed: u64,
    pub lb_gained: u64,
    pub alb_pushed: u64,
}

/// Per-LLC shared state (`struct sched_domain_shared`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LlcShared {
    pub has_idle_cores: bool,
    /// SIS_UTIL scan budget (v6.0+).
    pub nr_idle_scan: u32,
    /// When update_idle_cpu_scan() may next run for this LLC (ns).
    pub next_scan_update: u64,
}

/// `%*pb` cpumask rendering: hex, comma-separated 32-bit groups, most significant first.
fn cpumask_hex(m: &crate::cpumask::CpuMask, nr_cpus: usize) -> String {
    let groups = nr_cpus.div_ceil(32);
    let mut out = Vec::with_capacity(groups);
    for g in (0..groups).rev() {
        let mut w = 0u32;
        for b in 0..32 {
            let c = g * 32 + b;
            if c < nr_cpus && m.test(CpuId(c as u16)) {
                w |= 1 << b;
            }
        }
        out.push(if g == groups - 1 { format!("{:x}", w) } else { format!("{:08x}", w) });
    }
    // The first group is printed without zero padding only if it is partial.
    if nr_cpus.is_multiple_of(32) {
        out[0] = format!("{:08x}", u32::from_str_radix(&out[0], 16).unwrap_or(0));
    }
    out.join(",")
}

impl Kernel {
    /// /proc/schedstat, version 17, at time `now` (jiffies from the tick length).
    pub fn schedstat_v17(&self, now: u64, cpu_time: &[u64]) -> String {
        let mut o = String::new();
        let _ = writeln!(o, "version 17");
        let _ = writeln!(o, "timestamp {}", now / self.tun.tick_ns);
        for (c, rq) in self.rqs.iter().enumerate() {
            let (run_delay, pcount) =
                self.tasks.iter().filter(|t| t.cpu.idx() == c).fold((0, 0), |a, t| (a.0 + t.run_delay, a.1 + t.pcount));
            let _ = writeln!(
                o,
                "cpu{c} 0 0 {} {} {} {} {} {} {}",
                rq.nr_switches + rq.sched_goidle,
                rq.sched_goidle,
                rq.ttwu_count,
                rq.ttwu_local,
                cpu_time.get(c).copied().unwrap_or(0),
                run_delay,
                pcount
            );
            for (k, &id) in self.sd.per_cpu[c].iter().enumerate() {
                let d = &self.sd.domains[id as usize];
                let s = self.sd_stats[c][k];
                let mut fields = vec![0u64; 42];
                let lb = &self.lb_stats[c][k];
                for (t, lbt) in lb.iter().enumerate() {
                    let base = t * 11;
                    fields[base] = lbt.lb_count;
                    fields[base + 1] = lbt.lb_balanced;
                    fields[base + 2] = lbt.lb_failed;
                    fields[base + 7] = lbt.lb_gained;
                    fields[base + 9] = lbt.lb_nobusyq;
                }
                fields[33] = s.alb_count;
                fields[34] = s.alb_failed;
                fields[35] = s.alb_pushed;
                fields.extend([s.ttwu_wake_remote, s.ttwu_move_affine, s.ttwu_move_balance]);
                let f: Vec<String> = fields.iter().map(|x| x.to_string()).collect();
                let _ = writeln!(o, "domain{k} {} {} {}", d.name, cpumask_hex(&d.span, self.nr_cpus()), f.join(" "));
            }
        }
        o
    }

    /// Wakeup and balancing counters summed over CPUs: (ttwu_count,
    /// ttwu_local, per level bottom-up). Levels are matched by name and, for
    /// repeated names (NUMA), by their rank among equally named levels.
    pub fn level_stats(&self) -> (u64, u64, Vec<LevelStats>) {
        let mut levels: Vec<LevelStats> = Vec::new();
        let mut count = 0;
        let mut local = 0;
        for (c, rq) in self.rqs.iter().enumerate() {
            count += rq.ttwu_count;
            local += rq.ttwu_local;
            for (k, &id) in self.sd.per_cpu[c].iter().enumerate() {
                let name = self.sd.domains[id as usize].name;
                let s = self.sd_stats[c][k];
                let nth = self.sd.per_cpu[c][..k].iter().filter(|&&x| self.sd.domains[x as usize].name == name).count();
                let pos = levels.iter().enumerate().filter(|(_, l)| l.name == name).map(|(i, _)| i).nth(nth);
                let i = pos.unwrap_or_else(|| {
                    levels.push(LevelStats { name, ..Default::default() });
                    levels.len() - 1
                });
                let l = &mut levels[i];
                l.ttwu_wake_remote += s.ttwu_wake_remote;
                l.ttwu_move_affine += s.ttwu_move_affine;
                l.alb_pushed += s.alb_pushed;
                for t in &self.lb_stats[c][k] {
                    l.lb_count += t.lb_count;
                    l.lb_balanced += t.lb_balanced;
                    l.lb_failed += t.lb_failed;
                    l.lb_gained += t.lb_gained;
                }
            }
        }
        (count, local, levels)
    }
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
mod tests {
    use super::*;
    use crate::cpumask::CpuMask;
    #[test]
    fn cpumask_hex_format() {
        let m = CpuMask::from_cpus(8, [0, 1, 2, 3].map(CpuId));
        assert_eq!(cpumask_hex(&m, 8), "f");
        let m = CpuMask::from_cpus(64, [0, 32].map(CpuId));
        assert_eq!(cpumask_hex(&m, 64), "00000001,00000001");
        let m = CpuMask::from_cpus(40, [39].map(CpuId));
        assert_eq!(cpumask_hex(&m, 40), "80,00000000");
    }
}
