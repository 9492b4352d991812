//! /proc/schedstat as a real kernel prints it (kernel/sched/stats.c
//! `show_schedstat()`, Documentation/scheduler/sched-stats.rst; reference:
//! ecosystem.md §2): versions 15, 16 and 17, deltas between two snapshots,
//! and the names of the domain levels derived from their CPU masks.
//!
//! Layouts (per domain line, after `domain<K> [<NAME>] <mask>`):
//! - v15 (v4.x-v6.5): 36 fields; 8 load-balance fields per idle type in the
//!   order idle, busy, newidle (CPU_IDLE was 0), then alb x3, sbe x3, sbf x3,
//!   ttwu_wake_remote, ttwu_move_affine, ttwu_move_balance.
//! - v16 (v6.6-v6.12): the same 36 fields, idle types busy, idle, newidle.
//! - v17 (v6.13+): a domain NAME before the mask; 11 fields per idle type
//!   (busy, idle, newidle): lb_count, lb_balanced, lb_failed, lb_imbalance_load,
//!   lb_imbalance_util, lb_imbalance_task, lb_imbalance_misfit, lb_gained,
//!   lb_hot_gained, lb_nobusyq, lb_nobusyg; then alb, sbe, sbf x3 and the
//!   three ttwu fields: 45 in all.

use anyhow::{bail, Context, Result};
use schedlab_topology::{CpuId, CpuTopology};

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
}

/// One `cpu<N>` line and the domain lines after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuStat {
    pub cpu: u16,
    pub yld_count: u64,
    pub sched_count: u64,
    pub sched_goidle: u64,
    pub ttwu_count: u64,
    pub ttwu_local: u64,
    pub rq_cpu_time: u64,
    pub run_delay: u64,
    pub pcount: u64,
    pub domains: Vec<DomainStat>,
}

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
                    bail!("/proc/schedstat line {line_no}: cpu line has {} fields, expected 9", f.len() - 1);
                }
                let v = nums(&f[1..10], "cpu", line_no)?;
                cpus.push(CpuStat {
                    cpu,
                    yld_count: v[0],
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
            });
        }
        cpus.push(CpuStat {
            cpu: a.cpu,
            yld_count: sub(a.yld_count, b.yld_count, "yld_count")?,
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

/// One domain level summed over CPUs (what `schedlab run` prints per level).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Level {
    pub name: String,
    /// Span of this level's domain on the lowest-numbered CPU that has it.
    pub span_example: (u16, Vec<u16>),
    pub ttwu_wake_remote: u64,
    pub ttwu_move_affine: u64,
    pub lb_count: u64,
    pub lb_balanced: u64,
    pub lb_failed: u64,
    pub lb_gained: u64,
    pub alb_pushed: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub ttwu_count: u64,
    pub ttwu_local: u64,
    pub sched_count: u64,
    pub levels: Vec<Level>,
}

/// Sum a (delta) snapshot per level, levels named by [`level_name`]; levels
/// with one name (NUMA) are told apart by their rank among equally named
/// levels of the CPU, as `Kernel::level_stats` does. Errors name a domain whose
/// span is no group of the machine.
pub fn summarize(s: &Snapshot, topo: &CpuTopology) -> Result<Summary> {
    let mut out = Summary::default();
    for c in &s.cpus {
        out.ttwu_count += c.ttwu_count;
        out.ttwu_local += c.ttwu_local;
        out.sched_count += c.sched_count;
        let mut names: Vec<&'static str> = Vec::new();
        for d in &c.domains {
            let name = level_name(topo, c.cpu, &d.span).with_context(|| {
                format!(
                    "cpu{} domain{} spans CPUs {} in the guest, which is no SMT core, LLC, package or set of NUMA nodes of the machine; the guest topology does not match it",
                    c.cpu,
                    d.index,
                    schedlab_topology::cpulist(d.span.iter().map(|&x| CpuId(x)))
                )
            })?;
            let nth = names.iter().filter(|&&n| n == name).count();
            names.push(name);
            let pos = out.levels.iter().enumerate().filter(|(_, l)| l.name == name).map(|(i, _)| i).nth(nth);
            let i = pos.unwrap_or_else(|| {
                out.levels.push(Level { name: name.to_string(), span_example: (c.cpu, d.span.clone()), ..Default::default() });
                out.levels.len() - 1
            });
            let l = &mut out.levels[i];
            l.ttwu_wake_remote += d.ttwu_wake_remote;
            l.ttwu_move_affine += d.ttwu_move_affine;
            l.alb_pushed += d.alb_pushed;
            for t in &d.lb {
                l.lb_count += t.lb_count;
                l.lb_balanced += t.lb_balanced;
                l.lb_failed += t.lb_failed;
                l.lb_gained += t.lb_gained;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// Issue 13 item 10: `--schedstat` writes the version the modelled kernel
    /// wrote (15 up to v6.5, 16 for v6.6-v6.12), in that version's layout, and
    /// this parser reads back exactly the counters the kernel model kept.
    #[test]
    fn writer_versions_match_the_kernels_and_read_back() {
        let m = schedlab_machine::load("x86-12").unwrap();
        for (kernel, version) in [("v2.6.38", 15), ("v3.10", 15), ("v5.13", 15), ("v6.0", 15), ("v6.6", 16), ("v6.12", 16)] {
            let w = schedlab_workload::build(
                "hackbench",
                &schedlab_workload::Params::parse("groups=2,loops=30").unwrap(),
                12,
                &m.topology.core_groups(),
            )
            .unwrap();
            let cfg = schedlab_engine::SimConfig {
                seed: 1,
                duration_ns: None,
                schedstat: true,
                model: Default::default(),
                trace: false,
                switch_log: false,
            };
            let k = schedlab_kernel::Kernel::new(&m.topology, schedlab_kernel::profile::profile(kernel).unwrap());
            let (r, k) = schedlab_engine::Sim::new(&m, k, &w, &cfg).run_keep_kernel(&cfg);
            let text = r.schedstat.expect("schedstat asked for");
            let snap = parse(&text).unwrap_or_else(|e| panic!("{kernel}: {e:#}\n{text}"));
            assert_eq!(snap.version, version, "{kernel}");
            let mut lb_total = 0;
            for c in &snap.cpus {
                for d in &c.domains {
                    let want = &k.lb_stats[c.cpu as usize][d.index];
                    for (t, w) in want.iter().enumerate() {
                        assert_eq!(d.lb[t].lb_count, w.lb_count, "{kernel} cpu{} domain{} type {t}", c.cpu, d.index);
                        assert_eq!(d.lb[t].lb_gained, w.lb_gained, "{kernel} cpu{} domain{} type {t}", c.cpu, d.index);
                        lb_total += w.lb_count;
                    }
                    assert_eq!(d.ttwu_wake_remote, k.sd_stats[c.cpu as usize][d.index].ttwu_wake_remote);
                    assert_eq!(d.alb_pushed, k.sd_stats[c.cpu as usize][d.index].alb_pushed);
                    assert_eq!(d.name.is_some(), version >= 17);
                }
            }
            assert!(lb_total > 0, "{kernel}: the balancer ran");
        }
    }
}
