//! schedstat counters as the kernel keeps them (kernel/sched/stats.c,
//! Documentation/scheduler/sched-stats.rst; ecosystem reference §2) and the
//! /proc/schedstat text in the version of the modelled kernel (15, 16 or 17).

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
    /// The /proc/schedstat version this kernel writes (kernel/sched/stats.c
    /// SCHEDSTAT_VERSION): 15 up to v6.5; 16 from v6.6 (the cpu_idle_type
    /// enum reordered: busy first, then idle); 17 from v6.13 (domain names,
    /// lb_imbalance split into load/util/task/misfit).
    pub fn schedstat_version(&self) -> u32 {
        match self.profile.version {
            v if v < (6, 6) => 15,
            v if v < (6, 13) => 16,
            _ => 17,
        }
    }

    /// /proc/schedstat at time `now` (jiffies from the tick length), in the
    /// version and layout this kernel writes (`show_schedstat()`):
    /// - v15: `domain<K> <mask>`, then 8 lb fields per idle type in the order
    ///   idle, busy, newidle (lb_count, lb_balanced, lb_failed, lb_imbalance,
    ///   lb_gained, lb_hot_gained, lb_nobusyq, lb_nobusyg), alb/sbe/sbf x3 and
    ///   the three ttwu fields: 36;
    /// - v16: the same 36, idle types busy, idle, newidle;
    /// - v17: `domain<K> <name> <mask>`, 11 lb fields per idle type (busy, idle,
    ///   newidle; lb_imbalance_{load,util,task,misfit} for lb_imbalance): 45.
    // FIDELITY(F-600): counters the model does not keep (lb_imbalance*, lb_hot_gained,
    // lb_nobusyg, sbe/sbf, yld_count) are written as 0.
    pub fn schedstat(&self, now: u64, cpu_time: &[u64]) -> String {
        let version = self.schedstat_version();
        let mut o = String::new();
        let _ = writeln!(o, "version {version}");
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
            // Per idle type: (fields, offsets of lb_gained and lb_nobusyq).
            let (per, gained, nobusyq) = if version >= 17 { (11, 7, 9) } else { (8, 4, 6) };
            for (k, &id) in self.sd.per_cpu[c].iter().enumerate() {
                let d = &self.sd.domains[id as usize];
                let s = self.sd_stats[c][k];
                let mut fields = vec![0u64; 3 * per + 9];
                let lb = &self.lb_stats[c][k];
                // lb_stats is indexed busy, idle, newidle; v15 prints idle first.
                let order: [usize; 3] = if version >= 16 { [0, 1, 2] } else { [1, 0, 2] };
                for (slot, &t) in order.iter().enumerate() {
                    let (lbt, base) = (&lb[t], slot * per);
                    fields[base] = lbt.lb_count;
                    fields[base + 1] = lbt.lb_balanced;
                    fields[base + 2] = lbt.lb_failed;
                    fields[base + gained] = lbt.lb_gained;
                    fields[base + nobusyq] = lbt.lb_nobusyq;
                }
                fields[3 * per] = s.alb_count;
                fields[3 * per + 1] = s.alb_failed;
                fields[3 * per + 2] = s.alb_pushed;
                fields.extend([s.ttwu_wake_remote, s.ttwu_move_affine, s.ttwu_move_balance]);
                let f: Vec<String> = fields.iter().map(|x| x.to_string()).collect();
                let mask = cpumask_hex(&d.span, self.nr_cpus());
                if version >= 17 {
                    let _ = writeln!(o, "domain{k} {} {mask} {}", d.name, f.join(" "));
                } else {
                    let _ = writeln!(o, "domain{k} {mask} {}", f.join(" "));
                }
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
