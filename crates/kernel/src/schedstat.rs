//! /proc/schedstat, both ways: the WRITER (`Kernel::schedstat`, the text
//! the modelled kernel prints) and the READER (`parse`, for text a real
//! kernel printed: the oracle's guests, `schedlab schedstat report/diff`),
//! with one type for a domain level's counters (`LevelStats`) that the
//! kernel model's sums (`Kernel::level_stats`) and a parsed snapshot's sums
//! (`summarize`) both produce, so the two sides of an oracle comparison are
//! one type. Reference: kernel/sched/stats.c `show_schedstat()`,
//! Documentation/scheduler/sched-stats.rst, ecosystem.md §2.
//!
//! Versions 15, 16 and 17; layouts (per domain line, after `domain<K> [<NAME>] <mask>`):
//! - v15 (v4.x-v6.5): 36 fields; 8 load-balance fields per idle type in the
//!   order idle, busy, newidle (CPU_IDLE was 0), then alb x3, sbe x3, sbf x3,
//!   ttwu_wake_remote, ttwu_move_affine, ttwu_move_balance.
//! - v16 (v6.6-v6.12): the same 36 fields, idle types busy, idle, newidle.
//! - v17 (v6.13+): a domain NAME before the mask; 11 fields per idle type
//!   (busy, idle, newidle): lb_count, lb_balanced, lb_failed, lb_imbalance_load,
//!   lb_imbalance_util, lb_imbalance_task, lb_imbalance_misfit, lb_gained,
//!   lb_hot_gained, lb_nobusyq, lb_nobusyg; then alb, sbe, sbf x3 and the
//!   three ttwu fields: 45 in all.

use crate::core::Kernel;
use anyhow::{bail, Context, Result};
use schedlab_topology::{CpuId, CpuTopology};
use std::fmt::Write;

/// One domain level's schedstat summed over CPUs (and idle types for lb_*):
/// what the model keeps (`Kernel::level_stats`) and what a real kernel's
/// text sums to (`summarize`). The one type for a domain level's counters:
/// the engine's result, the oracle's comparison and `schedlab compare`'s
/// records all carry it. Serialised as `{"level": NAME, "ttwu_wake_remote":
/// ..., "alb_pushed": ...}`; a name must be one of `LEVEL_NAMES`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LevelStats {
    /// SMT, CLS, MC, PKG, NUMA (the kernel's level names).
    #[serde(rename = "level", deserialize_with = "de_level_name")]
    pub name: LevelName,
    pub ttwu_wake_remote: u64,
    pub ttwu_move_affine: u64,
    pub lb_count: u64,
    pub lb_balanced: u64,
    pub lb_failed: u64,
    pub lb_gained: u64,
    pub alb_pushed: u64,
}

/// A domain level's name, one of `LEVEL_NAMES`. (An alias so serde's derive
/// does not borrow the field from its input: it is read by `de_level_name`.)
pub type LevelName = &'static str;

/// Every domain level name the model builds or the reader names (the
/// profiles' SMT/SIBLING, CLS, MC, PKG/DIE/CPU; NODE; NUMA).
pub const LEVEL_NAMES: [&str; 9] = ["SMT", "SIBLING", "CLS", "MC", "PKG", "DIE", "CPU", "NODE", "NUMA"];

/// The `&'static` form of a domain level name (`LEVEL_NAMES`), None for any other.
pub fn static_level_name(n: &str) -> Option<&'static str> {
    LEVEL_NAMES.into_iter().find(|k| *k == n)
}

fn de_level_name<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<&'static str, D::Error> {
    let n = <String as serde::Deserialize>::deserialize(d)?;
    static_level_name(&n).ok_or_else(|| serde::de::Error::custom(format!("unknown domain level {n:?}; known: {}", LEVEL_NAMES.join(", "))))
}

impl LevelStats {
    /// Adds one CPU's domain: its ttwu and alb counters and its load-balance
    /// counters of every idle type.
    fn add_domain(&mut self, ttwu_wake_remote: u64, ttwu_move_affine: u64, alb_pushed: u64, lb: impl Iterator<Item = LbType>) {
        self.ttwu_wake_remote += ttwu_wake_remote;
        self.ttwu_move_affine += ttwu_move_affine;
        self.alb_pushed += alb_pushed;
        for t in lb {
            self.lb_count += t.lb_count;
            self.lb_balanced += t.lb_balanced;
            self.lb_failed += t.lb_failed;
            self.lb_gained += t.lb_gained;
        }
    }

    /// Adds another sum of the same level (runs pooled).
    pub fn add(&mut self, o: &LevelStats) {
        self.add_domain(
            o.ttwu_wake_remote,
            o.ttwu_move_affine,
            o.alb_pushed,
            std::iter::once(LbType { lb_count: o.lb_count, lb_balanced: o.lb_balanced, lb_failed: o.lb_failed, lb_gained: o.lb_gained }),
        );
    }
}

/// The slot of a CPU's domain among the levels summed so far: levels are
/// matched by name and, for repeated names (NUMA), by their rank `nth` among
/// the CPU's equally named levels; a new level is appended. The one rule of
/// `Kernel::level_stats` and `summarize`.
fn level_slot(levels: &mut Vec<LevelStats>, name: &'static str, nth: usize) -> usize {
    let pos = levels.iter().enumerate().filter(|(_, l)| l.name == name).map(|(i, _)| i).nth(nth);
    pos.unwrap_or_else(|| {
        levels.push(LevelStats { name, ..Default::default() });
        levels.len() - 1
    })
}

// ---------------------------------------------------------------------------
// Writer

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
                let i = level_slot(&mut levels, name, nth);
                let lb = self.lb_stats[c][k].iter().map(|t| LbType {
                    lb_count: t.lb_count,
                    lb_balanced: t.lb_balanced,
                    lb_failed: t.lb_failed,
                    lb_gained: t.lb_gained,
                });
                levels[i].add_domain(s.ttwu_wake_remote, s.ttwu_move_affine, s.alb_pushed, lb);
            }
        }
        (count, local, levels)
    }

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
}

// ---------------------------------------------------------------------------
// Reader

/// Load-balance field names of one idle type, v15 and v16 (8 per type).
pub const LB_FIELDS_V15: [&str; 8] =
    ["lb_count", "lb_balanced", "lb_failed", "lb_imbalance", "lb_gained", "lb_hot_gained", "lb_nobusyq", "lb_nobusyg"];
/// Load-balance field names of one idle type, v17 (11 per type).
pub const LB_FIELDS_V17: [&str; 11] = [
    "lb_count",
    "lb_balanced",
    "lb_failed",
    "lb_imbalance_load",
    "lb_imbalance_util",
    "lb_imbalance_task",
    "lb_imbalance_misfit",
    "lb_gained",
    "lb_hot_gained",
    "lb_nobusyq",
    "lb_nobusyg",
];
/// The fields after the three idle types, every version.
pub const DOMAIN_TAIL_FIELDS: [&str; 12] = [
    "alb_count",
    "alb_failed",
    "alb_pushed",
    "sbe_count",
    "sbe_balanced",
    "sbe_pushed",
    "sbf_count",
    "sbf_balanced",
    "sbf_pushed",
    "ttwu_wake_remote",
    "ttwu_move_affine",
    "ttwu_move_balance",
];

/// The names of a domain line's counters in print order for `version`:
/// `<idle type>_<lb field>` for the three idle types in that version's order
/// (v15: idle, busy, newidle; v16+: busy, idle, newidle), then the tail fields.
pub fn domain_field_names(version: u32) -> Vec<String> {
    let lb: &[&str] = if version >= 17 { &LB_FIELDS_V17 } else { &LB_FIELDS_V15 };
    let types = if version >= 16 { ["busy", "idle", "newidle"] } else { ["idle", "busy", "newidle"] };
    let mut names: Vec<String> = types.iter().flat_map(|t| lb.iter().map(move |f| format!("{t}_{f}"))).collect();
    names.extend(DOMAIN_TAIL_FIELDS.iter().map(|f| f.to_string()));
    names
}

/// Load-balance counters of one idle type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LbType {
    pub lb_count: u64,
    pub lb_balanced: u64,
    pub lb_failed: u64,
    pub lb_gained: u64,
}

/// One `domain<K>` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainStat {
    pub index: usize,
    /// The name printed by v17; None for v15/v16.
    pub name: Option<String>,
    /// The domain's span, ascending CPU numbers.
    pub span: Vec<u16>,
    /// Indexed busy, idle, newidle (whatever the version's print order).
    pub lb: [LbType; 3],
    pub alb_count: u64,
    pub alb_failed: u64,
    pub alb_pushed: u64,
    pub ttwu_wake_remote: u64,
    pub ttwu_move_affine: u64,
    pub ttwu_move_balance: u64,
    /// Every counter of the line in print order, named by `domain_field_names(version)`.
    pub counters: Vec<u64>,
}

/// One `cpu<N>` line and the domain lines after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuStat {
    pub cpu: u16,
    pub yld_count: u64,
    /// Always 0 since v2.6.23 (the O(1) scheduler's array switches), still printed.
    pub array_exp: u64,
    pub sched_count: u64,
    pub sched_goidle: u64,
    pub ttwu_count: u64,
    pub ttwu_local: u64,
    pub rq_cpu_time: u64,
    pub run_delay: u64,
    pub pcount: u64,
    pub domains: Vec<DomainStat>,
}

/// One /proc/schedstat text, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub version: u32,
    pub timestamp: u64,
    pub cpus: Vec<CpuStat>,
}

/// `%*pb` mask: hex, comma-separated 32-bit groups, most significant first.
pub fn parse_mask(s: &str) -> Result<Vec<u16>> {
    let mut cpus = Vec::new();
    let groups: Vec<&str> = s.split(',').collect();
    let n = groups.len();
    for (gi, g) in groups.iter().enumerate() {
        if g.is_empty() || g.len() > 8 {
            bail!("cpumask {s:?}: group {g:?} is not 1-8 hex digits");
        }
        let w = u32::from_str_radix(g, 16).with_context(|| format!("cpumask {s:?}: {g:?} is not hex"))?;
        let base = (n - 1 - gi) * 32;
        for b in 0..32 {
            if w & (1 << b) != 0 {
                let c = base + b;
                if c > u16::MAX as usize {
                    bail!("cpumask {s:?} names CPU {c}, beyond what schedlab handles");
                }
                cpus.push(c as u16);
            }
        }
    }
    cpus.sort_unstable();
    Ok(cpus)
}

fn nums(fields: &[&str], what: &str, line_no: usize) -> Result<Vec<u64>> {
    fields
        .iter()
        .map(|f| f.parse::<u64>().with_context(|| format!("/proc/schedstat line {line_no}: {what} field {f:?} is not a number")))
        .collect()
}

/// Reads /proc/schedstat text of version 15, 16 or 17.
pub fn parse(text: &str) -> Result<Snapshot> {
    let mut version = None;
    let mut timestamp = 0;
    let mut cpus: Vec<CpuStat> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        match f[0] {
            "version" => {
                let v: u32 = f
                    .get(1)
                    .and_then(|v| v.parse().ok())
                    .with_context(|| format!("/proc/schedstat line {line_no}: bad version line {line:?}"))?;
                if !(15..=17).contains(&v) {
                    bail!("/proc/schedstat version {v} is not supported (schedlab reads versions 15, 16 and 17)");
                }
                version = Some(v);
            }
            "timestamp" => {
                timestamp =
                    f.get(1).and_then(|v| v.parse().ok()).with_context(|| format!("/proc/schedstat line {line_no}: bad timestamp line"))?;
            }
            w if w.starts_with("cpu") => {
                if version.is_none() {
                    bail!("/proc/schedstat line {line_no}: cpu line before the version line");
                }
                let cpu: u16 = w[3..].parse().with_context(|| format!("/proc/schedstat line {line_no}: {w:?} is not cpu<N>"))?;
                if f.len() < 10 {
                    bail!("/proc/schedstat line {line_no}: a cpu line needs 9 fields, it has {}", f.len() - 1);
                }
                let v = nums(&f[1..10], "cpu", line_no)?;
                cpus.push(CpuStat {
                    cpu,
                    yld_count: v[0],
                    array_exp: v[1],
                    sched_count: v[2],
                    sched_goidle: v[3],
                    ttwu_count: v[4],
                    ttwu_local: v[5],
                    rq_cpu_time: v[6],
                    run_delay: v[7],
                    pcount: v[8],
                    domains: Vec::new(),
                });
            }
            w if w.starts_with("domain") => {
                let version = version.context("domain line before the version line")?;
                let index: usize = w[6..].parse().with_context(|| format!("/proc/schedstat line {line_no}: {w:?} is not domain<K>"))?;
                let cpu = cpus.last_mut().with_context(|| format!("/proc/schedstat line {line_no}: domain line before any cpu line"))?;
                let (name, mask_at, want) =
                    if version >= 17 { (Some(f.get(1).copied().unwrap_or("").to_string()), 2, 45) } else { (None, 1, 36) };
                let mask = f.get(mask_at).with_context(|| format!("/proc/schedstat line {line_no}: domain line without a cpumask"))?;
                let span = parse_mask(mask).with_context(|| format!("/proc/schedstat line {line_no}"))?;
                let vals = nums(&f[mask_at + 1..], "domain", line_no)?;
                if vals.len() != want {
                    bail!(
                        "/proc/schedstat line {line_no}: version {version} domain lines have {want} counters, this one has {}",
                        vals.len()
                    );
                }
                let (per, order): (usize, [usize; 3]) = match version {
                    // print order idle, busy, newidle -> slots busy=1, idle=0, newidle=2
                    15 => (8, [1, 0, 2]),
                    16 => (8, [0, 1, 2]),
                    _ => (11, [0, 1, 2]),
                };
                let gained = if per == 8 { 4 } else { 7 };
                let mut lb = [LbType::default(); 3];
                for (slot, &printed) in order.iter().enumerate() {
                    let b = printed * per;
                    lb[slot] = LbType { lb_count: vals[b], lb_balanced: vals[b + 1], lb_failed: vals[b + 2], lb_gained: vals[b + gained] };
                }
                let a = 3 * per;
                let t = want - 3;
                cpu.domains.push(DomainStat {
                    index,
                    name,
                    span,
                    lb,
                    alb_count: vals[a],
                    alb_failed: vals[a + 1],
                    alb_pushed: vals[a + 2],
                    ttwu_wake_remote: vals[t],
                    ttwu_move_affine: vals[t + 1],
                    ttwu_move_balance: vals[t + 2],
                    counters: vals,
                });
            }
            _ => {}
        }
    }
    let version = version.context("/proc/schedstat text has no version line")?;
    if cpus.is_empty() {
        bail!("/proc/schedstat text has no cpu lines");
    }
    Ok(Snapshot { version, timestamp, cpus })
}

fn sub(a: u64, b: u64, what: &str) -> Result<u64> {
    a.checked_sub(b).with_context(|| format!("schedstat counter {what} went backwards ({b} -> {a}); the snapshots are not of one boot"))
}

/// `after - before`, field by field; both must show the same CPUs and domains.
pub fn delta(before: &Snapshot, after: &Snapshot) -> Result<Snapshot> {
    if before.version != after.version || before.cpus.len() != after.cpus.len() {
        bail!("the two /proc/schedstat snapshots differ in version or CPU count");
    }
    let mut cpus = Vec::new();
    for (b, a) in before.cpus.iter().zip(&after.cpus) {
        if a.cpu != b.cpu || a.domains.len() != b.domains.len() {
            bail!("the two /proc/schedstat snapshots differ in the domains of cpu{}", a.cpu);
        }
        let mut domains = Vec::new();
        for (db, da) in b.domains.iter().zip(&a.domains) {
            if db.span != da.span {
                bail!("cpu{} domain{}: the span changed between the snapshots (CPU hotplug or cpusets?)", a.cpu, da.index);
            }
            let mut lb = [LbType::default(); 3];
            for (k, out) in lb.iter_mut().enumerate() {
                let (a, b) = (&da.lb[k], &db.lb[k]);
                *out = LbType {
                    lb_count: sub(a.lb_count, b.lb_count, "lb_count")?,
                    lb_balanced: sub(a.lb_balanced, b.lb_balanced, "lb_balanced")?,
                    lb_failed: sub(a.lb_failed, b.lb_failed, "lb_failed")?,
                    lb_gained: sub(a.lb_gained, b.lb_gained, "lb_gained")?,
                };
            }
            domains.push(DomainStat {
                index: da.index,
                name: da.name.clone(),
                span: da.span.clone(),
                lb,
                alb_count: sub(da.alb_count, db.alb_count, "alb_count")?,
                alb_failed: sub(da.alb_failed, db.alb_failed, "alb_failed")?,
                alb_pushed: sub(da.alb_pushed, db.alb_pushed, "alb_pushed")?,
                ttwu_wake_remote: sub(da.ttwu_wake_remote, db.ttwu_wake_remote, "ttwu_wake_remote")?,
                ttwu_move_affine: sub(da.ttwu_move_affine, db.ttwu_move_affine, "ttwu_move_affine")?,
                ttwu_move_balance: sub(da.ttwu_move_balance, db.ttwu_move_balance, "ttwu_move_balance")?,
                counters: da.counters.iter().zip(&db.counters).map(|(a, b)| sub(*a, *b, "domain counter")).collect::<Result<_>>()?,
            });
        }
        cpus.push(CpuStat {
            cpu: a.cpu,
            yld_count: sub(a.yld_count, b.yld_count, "yld_count")?,
            array_exp: sub(a.array_exp, b.array_exp, "array_exp")?,
            sched_count: sub(a.sched_count, b.sched_count, "sched_count")?,
            sched_goidle: sub(a.sched_goidle, b.sched_goidle, "sched_goidle")?,
            ttwu_count: sub(a.ttwu_count, b.ttwu_count, "ttwu_count")?,
            ttwu_local: sub(a.ttwu_local, b.ttwu_local, "ttwu_local")?,
            rq_cpu_time: sub(a.rq_cpu_time, b.rq_cpu_time, "rq_cpu_time")?,
            run_delay: sub(a.run_delay, b.run_delay, "run_delay")?,
            pcount: sub(a.pcount, b.pcount, "pcount")?,
            domains,
        });
    }
    Ok(Snapshot { version: after.version, timestamp: after.timestamp.saturating_sub(before.timestamp), cpus })
}

/// The name of a domain from its span, compared with the CPU's groups in the
/// machine: its SMT siblings (SMT), LLC (MC), cluster (CLS), package (PKG),
/// or a union of whole NUMA nodes (NUMA). The kernel keeps the lowest level
/// when two have one span (sd_degenerate / sd_parent_degenerate), so the
/// lowest matching group names it. None: the span matches nothing.
pub fn level_name(topo: &CpuTopology, cpu: u16, span: &[u16]) -> Option<&'static str> {
    if cpu as usize >= topo.nr_cpus() || span.iter().any(|&c| c as usize >= topo.nr_cpus()) || !span.contains(&cpu) {
        return None;
    }
    let me = *topo.cpu(CpuId(cpu));
    let same = |f: &dyn Fn(&schedlab_topology::CpuInfo) -> bool| -> bool {
        let group: Vec<u16> = topo.ids_where(|c| f(c)).map(|c| c.0).collect();
        group == span
    };
    if same(&|c| c.core == me.core) {
        return Some("SMT");
    }
    // A cluster spanning the whole LLC (clusters_per_llc = 1) is the MC level.
    if same(&|c| c.llc == me.llc) {
        return Some("MC");
    }
    if same(&|c| c.cluster == me.cluster) {
        return Some("CLS");
    }
    if same(&|c| c.package == me.package) {
        return Some("PKG");
    }
    // NUMA: the span is exactly the CPUs of some set of nodes.
    let nodes: Vec<u32> = {
        let mut v: Vec<u32> = span.iter().map(|&c| topo.cpu(CpuId(c)).node).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let union: Vec<u16> = topo.ids_where(|c| nodes.contains(&c.node)).map(|c| c.0).collect();
    (union == span).then_some("NUMA")
}

/// The `&'static` form of a level name the kernel prints in v17 schedstat
/// (sched_domain_topology_level names: SMT, CLS, MC, PKG, NODE, NUMA); None
/// for a name the model does not build.
fn known_level_name(n: &str) -> Option<&'static str> {
    ["SMT", "CLS", "MC", "PKG", "NODE", "NUMA"].into_iter().find(|k| *k == n)
}

/// A snapshot (or the model's counters) summed per domain level.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub ttwu_count: u64,
    pub ttwu_local: u64,
    pub sched_count: u64,
    /// Bottom-up.
    pub levels: Vec<LevelStats>,
    /// Per level (parallel to `levels`): the span of its domain on the
    /// lowest-numbered CPU that has it; empty for the model's sums.
    pub spans: Vec<(u16, Vec<u16>)>,
}

/// Sum a (delta) snapshot per level, levels named by [`level_name`]; levels
/// with one name (NUMA) are told apart by their rank among equally named
/// levels of the CPU, by the rule of `Kernel::level_stats`. Errors name a domain whose
/// span is no group of the machine.
pub fn summarize(s: &Snapshot, topo: &CpuTopology) -> Result<Summary> {
    let mut out = Summary::default();
    for c in &s.cpus {
        out.ttwu_count += c.ttwu_count;
        out.ttwu_local += c.ttwu_local;
        out.sched_count += c.sched_count;
        let mut names: Vec<&'static str> = Vec::new();
        for d in &c.domains {
            // v17 prints the kernel's own level name: it wins over the span
            // (which cannot tell a NODE level from a one-node NUMA level, or a
            // package-wide NUMA level from PKG); the span still has to be a
            // group of the machine.
            let by_span = level_name(topo, c.cpu, &d.span).with_context(|| {
                format!(
                    "cpu{} domain{} spans CPUs {} in the guest, which is no SMT core, LLC, package or set of NUMA nodes of the machine; the guest topology does not match it",
                    c.cpu,
                    d.index,
                    schedlab_topology::cpulist(d.span.iter().map(|&x| CpuId(x)))
                )
            })?;
            let name = d.name.as_deref().and_then(known_level_name).unwrap_or(by_span);
            let nth = names.iter().filter(|&&n| n == name).count();
            names.push(name);
            let i = level_slot(&mut out.levels, name, nth);
            if i == out.spans.len() {
                out.spans.push((c.cpu, d.span.clone()));
            }
            out.levels[i].add_domain(d.ttwu_wake_remote, d.ttwu_move_affine, d.alb_pushed, d.lb.iter().copied());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpumask::CpuMask;
    use crate::profile;

    #[test]
    fn level_stats_serialise_by_level_name() {
        let l = LevelStats { name: "MC", ttwu_wake_remote: 3, ttwu_move_affine: 2, lb_count: 7, lb_gained: 1, ..Default::default() };
        let text = serde_json::to_string(&l).unwrap();
        assert!(text.starts_with("{\"level\":\"MC\",\"ttwu_wake_remote\":3,"), "{text}");
        assert_eq!(serde_json::from_str::<LevelStats>(&text).unwrap(), l);
        for n in LEVEL_NAMES {
            assert_eq!(static_level_name(n), Some(n));
        }
        let bad = text.replace("\"MC\"", "\"XX\"");
        let e = serde_json::from_str::<LevelStats>(&bad).unwrap_err().to_string();
        assert!(e.contains("unknown domain level \"XX\""), "{e}");
    }

    #[test]
    fn cpumask_hex_format() {
        let m = CpuMask::from_cpus(8, [0, 1, 2, 3].map(CpuId));
        assert_eq!(cpumask_hex(&m, 8), "f");
        let m = CpuMask::from_cpus(64, [0, 32].map(CpuId));
        assert_eq!(cpumask_hex(&m, 64), "00000001,00000001");
        let m = CpuMask::from_cpus(40, [39].map(CpuId));
        assert_eq!(cpumask_hex(&m, 40), "80,00000000");
        assert_eq!(parse_mask(&cpumask_hex(&m, 40)).unwrap(), vec![39], "the reader reads what the writer writes");
    }

    /// A kernel whose every counter the writer prints holds a distinct value.
    fn counted_kernel(machine: &str, kernel: &str) -> (schedlab_machine::Machine, Kernel) {
        let m = schedlab_machine::load(machine).unwrap();
        // "v6.13": the v6.12 profile with the version that writes v17 (no profile is newer).
        let mut p = profile::profile(if kernel == "v6.13" { "v6.12" } else { kernel }).unwrap();
        if kernel == "v6.13" {
            p.version = (6, 13);
        }
        let mut k = Kernel::new(&m.topology, p);
        let mut x = 1u64;
        let mut next = || {
            x += 7;
            x
        };
        for c in 0..k.rqs.len() {
            let rq = &mut k.rqs[c];
            (rq.nr_switches, rq.sched_goidle, rq.ttwu_count, rq.ttwu_local) = (next(), next(), next(), next());
            for kk in 0..k.sd_stats[c].len() {
                k.sd_stats[c][kk] = crate::stats::SdStats {
                    ttwu_wake_remote: next(),
                    ttwu_move_affine: next(),
                    ttwu_move_balance: next(),
                    alb_pushed: next(),
                    alb_count: next(),
                    alb_failed: next(),
                };
                for t in 0..3 {
                    k.lb_stats[c][kk][t] = crate::stats::LbStats {
                        lb_count: next(),
                        lb_balanced: next(),
                        lb_failed: next(),
                        lb_gained: next(),
                        lb_nobusyq: next(),
                    };
                }
            }
        }
        (m, k)
    }

    /// Writer -> reader for every version: each counter the writer prints
    /// comes back from `parse` in its field, and the per-level sums of the
    /// text (`summarize`) equal the kernel's own (`Kernel::level_stats`):
    /// one `LevelStats` on both sides.
    #[test]
    fn round_trip_writer_to_reader_v15_v16_v17() {
        for (machine, kernel, version) in [
            ("x86-12", "v5.13", 15),
            ("zen3-2s-nps4", "v6.0", 15),
            ("x86-12", "v6.6", 16),
            ("zen3-2s-nps4", "v6.12", 16),
            ("x86-12", "v6.13", 17),
            ("zen3-2s-nps4", "v6.13", 17),
        ] {
            let (m, k) = counted_kernel(machine, kernel);
            assert_eq!(k.schedstat_version(), version, "{kernel}");
            let cpu_time: Vec<u64> = (0..k.rqs.len() as u64).map(|c| 1000 + c).collect();
            let text = k.schedstat(5_000_000_000, &cpu_time);
            let snap = parse(&text).unwrap_or_else(|e| panic!("{kernel}: {e:#}"));
            assert_eq!(snap.version, version);
            assert_eq!(snap.timestamp, 5_000_000_000 / k.tun.tick_ns);
            assert_eq!(snap.cpus.len(), k.rqs.len());
            for c in &snap.cpus {
                let (i, rq) = (c.cpu as usize, &k.rqs[c.cpu as usize]);
                assert_eq!(
                    (c.sched_count, c.sched_goidle, c.ttwu_count, c.ttwu_local, c.rq_cpu_time),
                    (rq.nr_switches + rq.sched_goidle, rq.sched_goidle, rq.ttwu_count, rq.ttwu_local, cpu_time[i])
                );
                assert_eq!(c.domains.len(), k.sd.per_cpu[i].len());
                for d in &c.domains {
                    let sd = &k.sd.domains[k.sd.per_cpu[i][d.index] as usize];
                    let want: Vec<u16> = sd.span.iter().map(|x| x.0).collect();
                    assert_eq!(d.span, want, "{kernel} cpu{i} domain{}", d.index);
                    assert_eq!(d.name.as_deref(), (version >= 17).then_some(sd.name));
                    let s = &k.sd_stats[i][d.index];
                    assert_eq!(
                        (d.alb_count, d.alb_failed, d.alb_pushed, d.ttwu_wake_remote, d.ttwu_move_affine, d.ttwu_move_balance),
                        (s.alb_count, s.alb_failed, s.alb_pushed, s.ttwu_wake_remote, s.ttwu_move_affine, s.ttwu_move_balance),
                        "{kernel} cpu{i} domain{}",
                        d.index
                    );
                    let names = domain_field_names(version);
                    assert_eq!(names.len(), d.counters.len());
                    let get = |n: &str| d.counters[names.iter().position(|x| x == n).unwrap_or_else(|| panic!("no field {n}"))];
                    let w = &k.lb_stats[i][d.index];
                    assert_eq!(
                        (
                            get("busy_lb_count"),
                            get("idle_lb_gained"),
                            get("newidle_lb_nobusyq"),
                            get("alb_pushed"),
                            get("ttwu_move_balance")
                        ),
                        (w[0].lb_count, w[1].lb_gained, w[2].lb_nobusyq, s.alb_pushed, s.ttwu_move_balance),
                        "{kernel} cpu{i} domain{}: fields by name",
                        d.index
                    );
                    for (t, w) in k.lb_stats[i][d.index].iter().enumerate() {
                        let got = d.lb[t];
                        assert_eq!(
                            got,
                            LbType { lb_count: w.lb_count, lb_balanced: w.lb_balanced, lb_failed: w.lb_failed, lb_gained: w.lb_gained },
                            "{kernel} cpu{i} domain{} idle type {t}",
                            d.index
                        );
                    }
                }
            }
            let sum = summarize(&snap, &m.topology).unwrap_or_else(|e| panic!("{kernel} on {machine}: {e:#}"));
            let (count, local, levels) = k.level_stats();
            assert_eq!((sum.ttwu_count, sum.ttwu_local), (count, local));
            if m.topology.nr_nodes() == 1 || version >= 17 {
                // v17 names its levels: the reader takes the kernel's names.
                assert_eq!(sum.levels, levels, "{kernel} on {machine}");
            } else {
                // Spans name the levels (`level_name`): on a machine with several
                // nodes per package the kernel's NODE level reads as NUMA (a node)
                // and its package-wide NUMA level as PKG. The counters are the same.
                let unnamed = |v: &[LevelStats]| v.iter().map(|l| LevelStats { name: "", ..l.clone() }).collect::<Vec<_>>();
                assert_eq!(unnamed(&sum.levels), unnamed(&levels), "{kernel} on {machine}");
                for (r, k) in sum.levels.iter().zip(&levels) {
                    assert!(
                        r.name == k.name || ["NODE", "NUMA", "PKG"].contains(&k.name),
                        "{kernel} on {machine}: {} read as {}",
                        k.name,
                        r.name
                    );
                }
            }
            assert_eq!(sum.spans.len(), sum.levels.len());
            assert!(levels.len() >= 2, "{machine}: several levels");
        }
    }

    #[test]
    fn pooled_levels_add() {
        let mut a = LevelStats { name: "MC", ttwu_wake_remote: 1, lb_count: 2, alb_pushed: 3, ..Default::default() };
        a.add(&LevelStats { name: "MC", ttwu_wake_remote: 10, lb_count: 20, lb_gained: 5, alb_pushed: 30, ..Default::default() });
        assert_eq!((a.ttwu_wake_remote, a.lb_count, a.lb_gained, a.alb_pushed), (11, 22, 5, 33));
    }

    fn v16_line(k: usize, mask: &str, lb_busy: u64, lb_idle: u64, gained_newidle: u64, remote: u64, affine: u64) -> String {
        let mut f = vec![0u64; 36];
        f[0] = lb_busy; // busy lb_count
        f[8] = lb_idle; // idle lb_count
        f[16 + 4] = gained_newidle; // newidle lb_gained
        f[26] = 3; // alb_pushed
        f[33] = remote;
        f[34] = affine;
        format!("domain{k} {mask} {}", f.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" "))
    }

    #[test]
    fn masks() {
        assert_eq!(parse_mask("03").unwrap(), vec![0, 1]);
        assert_eq!(parse_mask("00000001,00000100").unwrap(), vec![8, 32]);
        assert_eq!(parse_mask("ffff").unwrap().len(), 16);
        assert!(parse_mask("0x3").is_err());
        assert!(parse_mask("").is_err());
    }

    #[test]
    fn v16_fields_and_delta() {
        let before = format!("version 16\ntimestamp 100\ncpu0 0 0 10 5 7 2 1000 10 4\n{}\n", v16_line(0, "03", 1, 2, 3, 4, 5));
        let after = format!("version 16\ntimestamp 150\ncpu0 0 0 30 6 17 4 2000 10 9\n{}\n", v16_line(0, "03", 11, 12, 13, 14, 15));
        let b = parse(&before).unwrap();
        assert_eq!(b.version, 16);
        let d0 = &b.cpus[0].domains[0];
        assert_eq!(d0.span, vec![0, 1]);
        assert_eq!((d0.lb[0].lb_count, d0.lb[1].lb_count, d0.lb[2].lb_gained), (1, 2, 3));
        assert_eq!((d0.alb_pushed, d0.ttwu_wake_remote, d0.ttwu_move_affine), (3, 4, 5));
        let d = delta(&b, &parse(&after).unwrap()).unwrap();
        assert_eq!((d.cpus[0].ttwu_count, d.cpus[0].ttwu_local, d.cpus[0].sched_count), (10, 2, 20));
        assert_eq!(d.cpus[0].domains[0].ttwu_wake_remote, 10);
        assert_eq!(d.cpus[0].domains[0].alb_pushed, 0);
        assert!(delta(&parse(&after).unwrap(), &b).unwrap_err().to_string().contains("backwards"));
    }

    #[test]
    fn v15_idle_type_order() {
        // v15 prints idle first: its first lb_count is the idle type's.
        let text = format!("version 15\ntimestamp 1\ncpu0 0 0 0 0 0 0 0 0 0\n{}\n", v16_line(0, "3", 7, 9, 0, 0, 0));
        let s = parse(&text).unwrap();
        assert_eq!((s.cpus[0].domains[0].lb[0].lb_count, s.cpus[0].domains[0].lb[1].lb_count), (9, 7));
    }

    #[test]
    fn v17_with_names() {
        let mut f = vec![0u64; 45];
        f[7] = 2; // busy lb_gained
        f[42] = 8;
        f[43] = 9;
        let line = format!("domain0 SMT 3 {}", f.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" "));
        let s = parse(&format!("version 17\ntimestamp 5\ncpu1 0 0 0 0 0 0 0 0 0\n{line}\n")).unwrap();
        let d = &s.cpus[0].domains[0];
        assert_eq!(d.name.as_deref(), Some("SMT"));
        assert_eq!((d.lb[0].lb_gained, d.ttwu_wake_remote, d.ttwu_move_affine), (2, 8, 9));
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(parse("version 18\n").unwrap_err().to_string().contains("not supported"));
        assert!(parse("cpu0 1 2 3\n").is_err());
        assert!(parse("version 16\ncpu0 0 0 0 0 0 0 0 0 0\ndomain0 3 1 2 3\n").unwrap_err().to_string().contains("36 counters"));
        assert!(parse("version 16\n").unwrap_err().to_string().contains("no cpu lines"));
    }

    #[test]
    fn level_names_from_spans() {
        let m = schedlab_machine::load("../../examples/machines/numa-8cpu-2s-smt2.toml").unwrap();
        let t = &m.topology;
        assert_eq!(level_name(t, 0, &[0, 1]), Some("SMT"));
        assert_eq!(level_name(t, 0, &[0, 1, 2, 3]), Some("MC"));
        assert_eq!(level_name(t, 5, &[0, 1, 2, 3, 4, 5, 6, 7]), Some("NUMA"));
        assert_eq!(level_name(t, 0, &[0, 2]), None);
        assert_eq!(level_name(t, 0, &[2, 3]), None, "a span without the CPU itself");
        let z = schedlab_machine::load("zen3-2s-nps1").unwrap();
        // zen3: 8 cores per CCX (LLC), 8 CCXs per socket; smt-last numbering.
        let llc0: Vec<u16> = z.topology.ids_where(|c| c.llc == 0).map(|c| c.0).collect();
        let pkg0: Vec<u16> = z.topology.ids_where(|c| c.package == 0).map(|c| c.0).collect();
        assert_eq!(level_name(&z.topology, 0, &llc0), Some("MC"));
        assert_eq!(level_name(&z.topology, 0, &pkg0), Some("PKG"));
    }
}
