//! Human-readable and JSON renderings. Everything printed is a function of the
//! inputs and the seed: no wall-clock values, so output is byte-identical across runs.

use crate::{domains, fmt_flags, fmt_span, Prepared, RunArgs};
use schedlab_engine::RunResult;
use schedlab_kernel::features::SchedFeat;
use schedlab_kernel::profile::{EffectiveTunables, KernelProfile};
use schedlab_machine::Machine;
use schedlab_topology::{cpulist, CpuId};
use serde_json::Value;
use std::fmt::Write;

pub fn machine_show(m: &Machine, k: &KernelProfile) -> String {
    let t = &m.topology;
    let mut o = String::new();
    let _ = writeln!(o, "{}: {}", m.name, m.description);
    let _ = writeln!(o, "source: {}", m.source);
    let _ = writeln!(
        o,
        "{} CPUs: {} packages, {} NUMA nodes, {} LLCs, {} cores, {} threads/core; vendor {:?}",
        t.nr_cpus(),
        t.nr_packages(),
        t.nr_nodes(),
        t.nr_llcs(),
        t.nr_cores(),
        t.threads_per_core(),
        t.vendor()
    );
    let _ = writeln!(
        o,
        "caches: L1d {} KiB, L2 {} KiB/core, LLC {} KiB per instance ({})",
        m.caches.l1d_kib,
        m.caches.l2_kib,
        m.caches.llc_kib,
        if m.caches.llc_inclusive { "inclusive" } else { "non-inclusive" }
    );
    for n in 0..t.nr_nodes() as u32 {
        let cpus = t.ids_where(|c| c.node == n);
        let d: Vec<String> = t.distance_matrix()[n as usize].iter().map(|x| x.to_string()).collect();
        let _ = writeln!(o, "node {n}: cpus {}  distances {}", cpulist(cpus), d.join(" "));
    }
    let sd = domains(m, k);
    let _ = writeln!(o, "\nsched domains of cpu0 as {} builds them (bottom-up):", k.name);
    for (i, d) in sd.of(CpuId(0)).enumerate() {
        let _ = writeln!(
            o,
            "  domain{i} {:<8} span {:<20} weight {:>4}  groups {:>3}  imbalance_pct {}  busy_factor {}  cache_nice_tries {}{}",
            d.name,
            fmt_span(d),
            d.span_weight,
            d.groups.len(),
            d.imbalance_pct,
            d.busy_factor,
            d.cache_nice_tries,
            if d.imb_numa_nr > 0 { format!("  imb_numa_nr {}", d.imb_numa_nr) } else { String::new() }
        );
        let _ = writeln!(o, "          flags {}", fmt_flags(d.flags));
    }
    if sd.per_cpu[0].is_empty() {
        let _ = writeln!(o, "  (none: a single CPU has no sched domains)");
    }
    let _ = writeln!(o, "sd_llc_size {} (cpu0); distinct domains on the machine: {}", sd.sd_llc_size[0], sd.domains.len());
    o
}

pub fn kernel_show(k: &KernelProfile) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{}: {}", k.name, k.summary);
    let _ = writeln!(o, "tree: {}", k.tree);
    if k.patches.is_empty() {
        let _ = writeln!(o, "patches: none (the release as tagged)");
    } else {
        let _ = writeln!(o, "patches on top:");
        for p in &k.patches {
            let d = schedlab_kernel::profile::Patch::ALL.iter().find(|(_, q, _)| q == p).map_or("", |(_, _, d)| *d);
            let _ = writeln!(o, "  {} ({d})", p.name());
        }
    }
    let _ = writeln!(
        o,
        "pick: {:?}; sd_init: {:?}; find_idlest_group: {:?}; fork placement: {:?}",
        k.pick, k.sd_init, k.find_idlest, k.fork_placement
    );
    let _ = writeln!(o, "level names: {} {} {} {}", k.level_names.smt, k.level_names.cls, k.level_names.mc, k.level_names.pkg);
    let _ = writeln!(o, "algorithm variants:");
    let _ = writeln!(o, "  select_task_rq_fair shape   {:?}", k.select_shape);
    let _ = writeln!(o, "  wake_wide                   {:?}", k.wake_wide);
    let _ = writeln!(o, "  wake_affine                 {:?} (load: {:?})", k.wake_affine, k.wake_load);
    let _ = writeln!(
        o,
        "  select_idle_sibling         {:?}{}{}",
        k.sis,
        if k.sis_scan_from_next { ", scan from target+1" } else { ", scan from target" },
        if k.sis_cluster_first { ", cluster first" } else { "" }
    );
    let _ = writeln!(o, "  recent_used_cpu             {:?}", k.recent_used);
    let _ = writeln!(o, "  TTWU_QUEUE wake lists       {:?}", k.ttwu_queue);
    let _ = writeln!(o, "  NUMA balancing placement    {:?}: {}", k.numa, schedlab_kernel::Kernel::numa_balancing_form(k));
    let _ = writeln!(
        o,
        "  tg->load_avg updates        {}",
        if k.tg_load_ratelimit() {
            "at most once per ms per cfs_rq, past the 1/64 filter (1528c661c24b, v6.7)"
        } else {
            "every change past 1/64 of the last one published"
        }
    );
    let _ = writeln!(
        o,
        "  pipe waits                  {}",
        if k.pipe_exclusive_waits() && k.pipe_read_wakes_on_release() {
            "exclusive: a page freed from full slots wakes one writer (0ddad21d3e99 v5.5, aaec5a95d596 v6.14)"
        } else if k.pipe_exclusive_waits() {
            "exclusive: every read of a full pipe wakes one writer, which sleeps again unless a page was freed (0ddad21d3e99, f467a6a66419; v5.5-v6.13)"
        } else {
            "one shared pipe->wait: a freed page wakes every blocked writer (before v5.5)"
        }
    );
    if k.features.has(SchedFeat::DELAY_DEQUEUE) || k.empty_group_keeps_weight() {
        let _ = writeln!(
            o,
            "  delayed group entities      {}",
            if k.empty_group_keeps_weight() {
                "an emptied, ineligible group stays queued at its weight (152e11f6df29 v6.12, 66951e4860d3 v6.13)"
            } else {
                "an emptied, ineligible group stays queued (152e11f6df29, v6.12); update_cfs_group() may still reweight it while empty (fixed in v6.13; F-022)"
            }
        );
    }
    let _ = writeln!(
        o,
        "  epoll wakeups               {}",
        if k.epoll_sync_wakeup() {
            "pass the waker's WF_SYNC on (900bbaae67e9, v6.13)"
        } else {
            "plain wake_up(), never sync (before v6.13)"
        }
    );
    let t = &k.tunables;
    let _ = writeln!(
        o,
        "tunables (normalized): base_slice {} ns, latency {} ns, min_granularity {} ns, wakeup_granularity {} ns, migration_cost {} ns, HZ {}",
        t.base_slice_ns, t.latency_ns, t.min_granularity_ns, t.wakeup_granularity_ns, t.migration_cost_ns, t.hz
    );
    let e = EffectiveTunables::new(k, 8);
    let _ = writeln!(
        o,
        "effective on >= 8 CPUs (factor 4): base_slice {} ns, latency {} ns, min_granularity {} ns",
        e.base_slice_ns, e.latency_ns, e.min_granularity_ns
    );
    let rules = k.eevdf_rules();
    if !rules.is_empty() {
        let _ = writeln!(o, "EEVDF rules:");
        for (n, r) in rules {
            let _ = writeln!(o, "  {n:<27} {r}");
        }
    }
    let _ = writeln!(o, "features (the bits this kernel's features.h has):");
    for f in SchedFeat::ALL.iter().filter(|f| k.has_feature_bit(**f)) {
        let _ = writeln!(o, "  {}{}", if k.features.has(*f) { "" } else { "NO_" }, f.name());
    }
    o
}

fn util(res: &RunResult) -> (f64, f64, f64) {
    let u: Vec<f64> = res.cpus.iter().map(|&(b, i)| if b + i == 0 { 0.0 } else { b as f64 / (b + i) as f64 }).collect();
    let avg = u.iter().sum::<f64>() / u.len().max(1) as f64;
    let min = u.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = u.iter().cloned().fold(0.0, f64::max);
    (avg, min, max)
}

fn params_str(p: &Prepared) -> String {
    p.workload.params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

pub fn run_summary(p: &Prepared, args: &RunArgs, r: &RunResult) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "schedlab run: {}{} on {} ({} CPUs), kernel {}{}, seed {}",
        p.workload.name,
        match params_str(p) {
            s if s.is_empty() => s,
            s => format!(" {s}"),
        },
        p.machine.name,
        p.machine.topology.nr_cpus(),
        p.kernel.name,
        args.features.as_deref().map(|f| format!(" [{f}]")).unwrap_or_default(),
        args.seed
    );
    if p.duration_defaulted {
        let _ = writeln!(o, "  (time-bounded workload: --duration not given, simulating 1s)");
    }
    let dir = if r.higher_is_better { "higher is better" } else { "lower is better" };
    let _ = writeln!(o, "  {:<22} {:.6} {}   ({dir})", r.metric_name, r.metric_value, r.metric_unit);
    let _ = writeln!(o, "  {:<22} {:.3} ms", "simulated time", r.simulated_ns as f64 / 1e6);
    let _ = writeln!(o, "  {:<22} {} voluntary, {} involuntary", "context switches", r.voluntary_switches, r.involuntary_switches);
    let _ = writeln!(o, "  {:<22} {}", "wakeups", r.wakeups);
    let w = &r.chan_waits;
    if w.reads + w.writes > 0 {
        let rewaits = match w.pipe_rewaits {
            0 => String::new(),
            n => format!(" ({n} by pipe writers woken to find the slots still full)"),
        };
        let _ = writeln!(o, "  {:<22} {} reads on an empty channel, {} writes on a full one{rewaits}", "channel waits", w.reads, w.writes);
    }
    let _ = writeln!(o, "  {:<22} {}", "migrations", r.migrations);
    let _ = writeln!(o, "  {:<22} {}", "mm switches", r.mm_switches);
    if r.groups.len() > 1 {
        let _ = writeln!(o, "  {:<22} {}", "cross-group switches", r.group_switches);
        let total: u64 = r.groups.iter().map(|g| g.runtime_ns).sum();
        let _ = writeln!(o, "  task groups (CPU time):");
        for g in &r.groups {
            if g.tasks == 0 {
                continue;
            }
            let _ = writeln!(
                o,
                "    {:<20} shares {:>6}  {:>4} tasks  {:>10.3} ms ({:5.1}%)",
                g.name,
                g.shares,
                g.tasks,
                g.runtime_ns as f64 / 1e6,
                pct(g.runtime_ns, total)
            );
        }
    }
    crate::numa_out::text(&mut o, r.numa.as_ref());
    let _ = writeln!(
        o,
        "  {:<22} p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1}",
        "run delay (us)",
        r.run_delay_p50 as f64 / 1e3,
        r.run_delay_p90 as f64 / 1e3,
        r.run_delay_p99 as f64 / 1e3,
        r.run_delay_max as f64 / 1e3
    );
    for l in &r.latencies {
        let _ = writeln!(
            o,
            "  {:<22} mean {:.1}  p50 {:.1}  p90 {:.1}  p95 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}  ({} samples)",
            format!("latency hist {} (us)", l.hist),
            l.mean as f64 / 1e3,
            l.p50 as f64 / 1e3,
            l.p90 as f64 / 1e3,
            l.p95 as f64 / 1e3,
            l.p99 as f64 / 1e3,
            l.p999 as f64 / 1e3,
            l.max as f64 / 1e3,
            l.count
        );
    }
    let (avg, min, max) = util(r);
    let _ = writeln!(o, "  {:<22} avg {:.1}%  min {:.1}%  max {:.1}%", "CPU busy", avg * 100.0, min * 100.0, max * 100.0);
    let _ = writeln!(o, "  {:<22} {} created, {} exited, {} simulation events", "tasks", r.tasks_created, r.tasks_exited, r.events);
    if r.blocked_forever > 0 {
        let _ = writeln!(o, "  {:<22} {} tasks (deadlock or lost wakeup: nothing could wake them)", "blocked forever", r.blocked_forever);
    }
    let _ = writeln!(
        o,
        "  {:<22} L1 refills {}, L2 misses {}, LLC misses {}, DRAM {:.1} MB ({:.1} MB remote), rq-lock wait {:.3} ms, idle exit {:.3} ms",
        "machine",
        r.l1_refills,
        r.l2_misses,
        r.llc_misses,
        r.dram_bytes as f64 / 1e6,
        r.remote_bytes as f64 / 1e6,
        r.rq_lock_wait_ns as f64 / 1e6,
        r.idle_exit_ns as f64 / 1e6
    );
    if r.tg_line_ns > 0 {
        let _ = writeln!(
            o,
            "  {:<22} {:.3} ms waiting for and moving the task groups' tg->load_avg lines",
            "group lines",
            r.tg_line_ns as f64 / 1e6
        );
    }
    let a = &r.arrivals;
    if a.arrived > 0 {
        let secs = r.simulated_ns as f64 / 1e9;
        let _ = writeln!(
            o,
            "  {:<22} {} requests from the network ({:.0}/s offered), {} dropped (queue full), {} woke a blocked reader",
            "open loop",
            a.arrived,
            a.arrived as f64 / secs.max(1e-9),
            a.dropped,
            a.wakeups
        );
        if a.dropped > 0 {
            let _ = writeln!(o, "  {:<22} the server did not keep up with the offered rate: lower rate= or add threads=", "warning");
        }
    }
    let n = &r.noise;
    if n.kthread_wakeups + n.irqs + n.tick_ns > 0 {
        let _ = writeln!(
            o,
            "  {:<22} kthreads {} runs ({:.3} ms), interrupts {} ({:.3} ms), tick {:.3} ms (not in the workload's figures; NO_NOISE turns it off)",
            "machine noise",
            n.kthread_wakeups,
            n.kthread_ns as f64 / 1e6,
            n.irqs,
            n.irq_ns as f64 / 1e6,
            n.tick_ns as f64 / 1e6
        );
    }
    o.push_str(&wakeup_table(r));
    o
}

fn pct(n: u64, d: u64) -> f64 {
    if d == 0 {
        0.0
    } else {
        100.0 * n as f64 / d as f64
    }
}

/// The sched-scoreboard "Wakeup info" block: shares of all try_to_wake_up()
/// calls that woke the task on the waker's CPU, on a CPU first sharing each
/// domain level with it, and that wake_affine() pulled (schedstat, charged to the waker).
pub fn wakeup_table(r: &RunResult) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "  wakeups ({} try_to_wake_up calls; shares of all):", r.ttwu_count);
    let _ = writeln!(o, "    {:<36} {:>10} ({:5.1}%)", "Wakeups on same CPU", r.ttwu_local, pct(r.ttwu_local, r.ttwu_count));
    for l in &r.levels {
        let label = format!("Wakeups on same {} cpus", l.name);
        let _ = writeln!(o, "    {:<36} {:>10} ({:5.1}%)", label, l.ttwu_wake_remote, pct(l.ttwu_wake_remote, r.ttwu_count));
    }
    for l in &r.levels {
        let label = format!("Affine wakeups on same {} cpus", l.name);
        let _ = writeln!(o, "    {:<36} {:>10} ({:5.1}%)", label, l.ttwu_move_affine, pct(l.ttwu_move_affine, r.ttwu_count));
    }
    let _ = writeln!(o, "  load balancing per level (all CPUs, busy + idle + newly idle):");
    let _ = writeln!(o, "    {:<8} {:>10} {:>10} {:>10} {:>10} {:>10}", "level", "lb_count", "balanced", "failed", "gained", "alb_pushed");
    for l in &r.levels {
        let _ = writeln!(
            o,
            "    {:<8} {:>10} {:>10} {:>10} {:>10} {:>10}",
            l.name, l.lb_count, l.lb_balanced, l.lb_failed, l.lb_gained, l.alb_pushed
        );
    }
    o
}

/// The `run --json` document: the library's `RunReport`, serialised, plus
/// the NUMA tables for runs with memory on a NUMA machine (other runs' JSON
/// stays as it was).
pub fn run_json(p: &Prepared, _args: &RunArgs, r: &RunResult) -> Value {
    let mut v = schedlab_lab::RunReport::new(p, r).to_json();
    if let Some(n) = crate::numa_out::json(r.numa.as_ref()) {
        v["numa"] = n;
    }
    v
}

/// `--switch-log`: the per-CPU sched_switch sequence as tab-separated text,
/// one switch per line: time (ns), CPU, previous and next task as
/// `comm-pid` (`<idle>-0` for the idle task; pid = 1000 + task index, as in
/// `--trace`) with
/// their task groups.
pub fn switch_log(p: &Prepared, r: &RunResult, tasks: &[(String, u32)], groups: &[String]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# schedlab switch log: {} on {}, kernel {}", p.workload.name, p.machine.name, p.kernel.name);
    let _ = writeln!(o, "# time_ns\tcpu\tprev\tprev_group\tnext\tnext_group");
    let who = |t: Option<u32>| match t {
        Some(t) => {
            let (name, g) = &tasks[t as usize];
            (format!("{}-{}", schedlab_engine::trace::escape_name(name), 1000 + t), groups[*g as usize].as_str())
        }
        None => ("<idle>-0".to_string(), "-"),
    };
    for s in &r.switch_log {
        let (pn, pg) = who(s.prev);
        let (nn, ng) = who(s.next);
        let _ = writeln!(o, "{}\t{}\t{}\t{}\t{}\t{}", s.t, s.cpu, pn, pg, nn, ng);
    }
    o
}
