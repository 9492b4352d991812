//! Result assembly: what a run produced (`RunResult` and its parts) and
//! `Sim::finish`, which gathers it from the kernel, the engine's counters and
//! the metrics at the end of a run.

use crate::*;

/// Results of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunResult {
    pub metric_name: String,
    pub metric_value: f64,
    /// Why the run has no valid metric value, if it has none: its marks were
    /// not reached (a run-to-completion workload cut by `--duration`, a
    /// deadlock), or a latency metric has no samples. `metric_value` is then
    /// meaningless and must not be reported as a result.
    pub metric_missing: Option<String>,
    /// Tasks still alive when nothing was left to happen (no event could ever
    /// wake them): a deadlock or a lost wakeup in the workload.
    pub blocked_forever: u64,
    pub metric_unit: String,
    pub higher_is_better: bool,
    pub simulated_ns: u64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    pub migrations: u64,
    pub wakeups: u64,
    pub run_delay_p50: u64,
    pub run_delay_p90: u64,
    pub run_delay_p99: u64,
    pub run_delay_max: u64,
    /// (busy_ns, idle_ns) per CPU.
    pub cpus: Vec<(u64, u64)>,
    pub events: u64,
    pub tasks_created: u64,
    pub tasks_exited: u64,
    /// Tasks woken but never run by the end (0 unless the run was cut by --duration).
    pub woken_never_ran: u64,
    pub mm_switches: u64,
    /// Switches between tasks of different task groups on a CPU (idle in
    /// between does not count as a group).
    pub group_switches: u64,
    /// Per task group (root first): CPU time and task count.
    pub groups: Vec<GroupStat>,
    /// The per-CPU sched_switch sequence, when `SimConfig::switch_log` is set.
    pub switch_log: Vec<SwitchRec>,
    /// Name (from the workload's task spec) and task group of every task, by task index.
    pub task_names: Vec<(String, u32)>,
    pub idle_exit_ns: u64,
    /// Machine-model counters. `l1_refills`: lines of L1 hot sets refilled
    /// from the L2 at switch-in (F-026).
    pub l1_refills: u64,
    pub l2_misses: u64,
    pub llc_misses: u64,
    pub dram_bytes: u64,
    pub remote_bytes: u64,
    pub rq_lock_wait_ns: u64,
    /// Time spent waiting for and moving task groups' `tg->load_avg` lines.
    pub tg_line_ns: u64,
    /// schedstat: try_to_wake_up() calls and those that woke on the waker's CPU.
    pub ttwu_count: u64,
    pub ttwu_local: u64,
    /// Per domain level bottom-up: wakeup and load-balance schedstat counters.
    pub levels: Vec<schedlab_kernel::stats::LevelStats>,
    /// /proc/schedstat at the end (the modelled kernel's version), when requested.
    pub schedstat: Option<String>,
    /// Latency histograms recorded by `Op::WakeLatency` (those with samples), ns.
    pub latencies: Vec<LatencySummary>,
    /// The sched tracepoints of the run, when `SimConfig::trace` asked for them.
    pub trace: Option<Box<trace::Trace>>,
    /// Memory per node and NUMA balancing, for workloads that declare memory on NUMA machines.
    pub numa: Option<numa::NumaReport>,
    /// The machine's background (tick and interrupt time, kernel threads).
    pub noise: NoiseStats,
    /// Open-loop requests from the network (all zero in closed-loop runs).
    pub arrivals: ArrivalStats,
    /// Where tasks slept on channels (`Op::Read` / `Op::Write` that blocked).
    pub chan_waits: ChanWaits,
}

impl RunResult {
    /// Task group names by group id (the root group is "/").
    pub fn group_names(&self) -> Vec<String> {
        self.groups.iter().map(|g| g.name.clone()).collect()
    }
}

/// CPU time of one task group.
/// Blocking channel operations of a run: reads that found their channel
/// empty, writes that found it full, and of those writes the ones by a pipe
/// writer back from a wait that found the slots still full (a wakeup that
/// let no write through: v5.5-v6.13's `was_full`, or a slot taken first).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChanWaits {
    pub reads: u64,
    pub writes: u64,
    pub pipe_rewaits: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupStat {
    pub name: String,
    pub shares: u64,
    /// Tasks created in the group.
    pub tasks: u64,
    /// Sum of the tasks' `sum_exec_runtime` (ns).
    pub runtime_ns: u64,
}

/// One context switch: at `t`, `cpu` switched from `prev` to `next` (task
/// index; None = the idle task).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwitchRec {
    pub t: u64,
    pub cpu: u16,
    pub prev: Option<u32>,
    pub next: Option<u32>,
}

/// Percentiles of one latency histogram (ns).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LatencySummary {
    pub hist: u32,
    pub count: u64,
    /// Mean of the samples (ns).
    pub mean: u64,
    pub p50: u64,
    pub p90: u64,
    /// sysbench's `--percentile=95` default.
    pub p95: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

impl Sim<'_> {
    pub(crate) fn finish(&mut self, end: u64) -> RunResult {
        let mut groups: Vec<GroupStat> =
            self.kernel.groups().iter().map(|g| GroupStat { name: g.name.clone(), shares: g.shares, tasks: 0, runtime_ns: 0 }).collect();
        for t in &self.kernel.tasks {
            if self.is_kthread(t.id) {
                continue; // the machine's, not the workload's (noise.rs)
            }
            let g = &mut groups[t.group as usize];
            g.tasks += 1;
            // sum_exec_runtime, plus what the running task ran since its last update_curr().
            let running = self.cpus[t.cpu.idx()].running == Some(t.id);
            g.runtime_ns += t.se.sum_exec_runtime + if running { end.saturating_sub(t.se.exec_start) } else { 0 };
        }
        // Close the busy/idle intervals.
        for cpu in &mut self.cpus {
            let d = end.saturating_sub(cpu.since);
            if cpu.running.is_some() {
                cpu.busy_ns += d;
            } else {
                cpu.idle_ns += d;
            }
            cpu.since = end;
        }
        let mut vol = 0;
        let mut invol = 0;
        let mut migr = 0;
        let mut never_ran = 0;
        let mut noise = self.noise.stats;
        for t in &self.kernel.tasks {
            if self.is_kthread(t.id) {
                noise.switches += t.nvcsw + t.nivcsw;
                noise.migrations += t.nr_migrations;
                continue;
            }
            vol += t.nvcsw;
            invol += t.nivcsw;
            migr += t.nr_migrations;
            if t.state == TaskState::Runnable && t.last_queued.is_some() {
                never_ran += 1;
            }
            // Waits still open at the end count up to the end.
        }
        // Run delay samples: each task's waits are summarised by the kernel's
        // sched_info; per-wait samples are recorded by the engine.
        // The kernel threads' wakeups (their first activation is a fork) are not the workload's.
        let kthread_ttwu = noise.kthread_wakeups - self.kthread_ids.len() as u64;
        let wakeups = self.kernel.rqs.iter().map(|r| r.ttwu_count).sum::<u64>() - kthread_ttwu;
        let (ttwu_count, ttwu_local, levels) = self.kernel.level_stats();
        let busy: Vec<u64> = self.cpus.iter().map(|c| c.busy_ns).collect();
        let schedstat = self.want_schedstat.then(|| self.kernel.schedstat(end, &busy));
        let mark = |id: u32| self.marks[id as usize];
        // Why marks that were asked for are missing: the run did not get there.
        let not_reached = |what: &str, id: u32| -> String {
            let why = if self.cut && !self.wl.time_bounded {
                format!(
                    "--duration {} cut the run before it completed ({} of {} tasks exited); {} runs to completion: raise --duration or drop it",
                    fmt_dur(end),
                    self.exited,
                    self.wl.nr_tasks(),
                    self.wl.name
                )
            } else if self.blocked_forever > 0 {
                format!(
                    "the run ended with {} tasks blocked forever (deadlock or lost wakeup: nothing was left that could wake them); fix the workload's waits and wakeups",
                    self.blocked_forever
                )
            } else if let Some(nth) = self.wl.programs.iter().flatten().find_map(|op| match *op {
                Op::MarkNth { id: m, nth } if m == id => Some(nth),
                _ => None,
            }) {
                format!(
                    "`mark_nth id={id} nth={nth}` ran {} time(s) before the run ended, fewer than {nth}; give nth at most the number of tasks that pass it",
                    self.mark_hits[id as usize]
                )
            } else {
                format!("no task executed `mark id={id}` before the run ended; check the workload's program")
            };
            format!("the metric's {what} mark (mark id={id}) was not reached: {why}")
        };
        let mut missing: Option<String> = None;
        let span = |s: Option<u32>, e: Option<u32>, missing: &mut Option<String>| -> (u64, u64) {
            let sv = match s {
                None => 0,
                Some(id) => mark(id).unwrap_or_else(|| {
                    missing.get_or_insert_with(|| not_reached("start", id));
                    0
                }),
            };
            let ev = match e {
                None => end,
                Some(id) => mark(id).unwrap_or_else(|| {
                    missing.get_or_insert_with(|| not_reached("end", id));
                    end
                }),
            };
            if ev < sv && missing.is_none() {
                *missing = Some(format!(
                    "the metric's end mark (mark id={}) was last reached before its start mark (mark id={}); the workload must mark the start first",
                    e.unwrap_or(0),
                    s.unwrap_or(0)
                ));
            }
            (sv, ev)
        };
        let (name, value, unit) = match &self.wl.metric {
            MetricSpec::Elapsed { name, start, end: e } => {
                let (s, f) = span(Some(*start), Some(*e), &mut missing);
                (name.clone(), f.saturating_sub(s) as f64 / 1e9, "s".to_string())
            }
            MetricSpec::Rate { name, unit, counter, start, end: e } => {
                let (s, f) = span(*start, *e, &mut missing);
                let secs = (f.saturating_sub(s)) as f64 / 1e9;
                let v = if secs > 0.0 { self.counters[*counter as usize] as f64 / secs } else { 0.0 };
                (name.clone(), v, unit.clone())
            }
            MetricSpec::ScaledRate { name, unit, counter, divisor, start, end: e } => {
                let (s, f) = span(*start, *e, &mut missing);
                let secs = (f.saturating_sub(s)) as f64 / 1e9;
                let v = if secs > 0.0 { self.counters[*counter as usize] as f64 / *divisor as f64 / secs } else { 0.0 };
                (name.clone(), v, unit.clone())
            }
            MetricSpec::LatencyPercentile { name, hist, q } => {
                let v = self.lat_hists.get(*hist as usize).map_or(0, |h| h.quantile(*q));
                (name.clone(), v as f64 / 1e3, "us".to_string())
            }
            MetricSpec::LatencyMean { name, hist } => (name.clone(), self.latency_mean(*hist as usize) as f64 / 1e3, "us".to_string()),
            MetricSpec::BestRate { name, unit, hist, amount, divisor } => {
                let v = match self.lat_mins.get(*hist as usize) {
                    Some(&best) if best > 0 && best != u64::MAX => *amount as f64 / *divisor as f64 / (best as f64 / 1e9),
                    _ => 0.0,
                };
                (name.clone(), v, unit.clone())
            }
        };
        if let MetricSpec::LatencyPercentile { hist, .. } | MetricSpec::LatencyMean { hist, .. } | MetricSpec::BestRate { hist, .. } =
            &self.wl.metric
        {
            if self.lat_hists.get(*hist as usize).is_none_or(|h| h.count() == 0) {
                missing = Some(format!(
                    "{name}: latency histogram {hist} has no samples (no request or wakeup completed within the run); run longer (--duration) or check the workload's req_start/req_end or wake_latency ops"
                ));
            }
        }
        // A run-to-completion workload cut short has no result even when its
        // metric has no marks (e.g. a rate over the whole run).
        if missing.is_none() && self.cut && !self.wl.time_bounded {
            missing = Some(format!(
                "--duration {} cut the run before it completed ({} of {} tasks exited); {} runs to completion: raise --duration or drop it",
                fmt_dur(end),
                self.exited,
                self.wl.nr_tasks(),
                self.wl.name
            ));
        }
        let latencies = self
            .lat_hists
            .iter()
            .enumerate()
            .filter(|(_, h)| h.count() > 0)
            .map(|(i, h)| LatencySummary {
                hist: i as u32,
                count: h.count(),
                mean: self.latency_mean(i),
                p50: h.quantile(0.50),
                p90: h.quantile(0.90),
                p95: h.quantile(0.95),
                p99: h.quantile(0.99),
                p999: h.quantile(0.999),
                max: h.max(),
            })
            .collect();
        RunResult {
            metric_name: name,
            metric_value: value,
            metric_missing: missing,
            metric_unit: unit,
            higher_is_better: self.wl.metric.higher_is_better(),
            simulated_ns: end,
            voluntary_switches: vol,
            involuntary_switches: invol,
            migrations: migr,
            wakeups,
            run_delay_p50: self.run_delay.quantile(0.50),
            run_delay_p90: self.run_delay.quantile(0.90),
            run_delay_p99: self.run_delay.quantile(0.99),
            run_delay_max: self.run_delay.max(),
            cpus: self.cpus.iter().map(|c| (c.busy_ns, c.idle_ns)).collect(),
            events: self.events,
            tasks_created: self.created,
            tasks_exited: self.exited,
            blocked_forever: self.blocked_forever,
            woken_never_ran: never_ran,
            mm_switches: self.mm_switches,
            group_switches: self.group_switches,
            groups,
            switch_log: self.switch_log.take().unwrap_or_default(),
            task_names: self
                .rt
                .iter()
                .zip(&self.kernel.tasks)
                .map(|(rt, t)| match self.wl.tasks.get(rt.spec as usize) {
                    Some(ts) => (ts.name.clone(), t.group),
                    None if self.noise.unbound_index(t.id).is_some() => (self.noise.unbound_name(t.id).unwrap_or_default(), t.group),
                    None => (format!("kthread/{}", t.cpu.0), t.group),
                })
                .collect(),
            idle_exit_ns: self.idle_exit_ns,
            l1_refills: self.l1_refills,
            l2_misses: self.l2_misses,
            llc_misses: self.llc_misses,
            dram_bytes: self.dram_bytes,
            remote_bytes: self.remote_bytes,
            rq_lock_wait_ns: self.rq_lock_wait_ns,
            tg_line_ns: self.tg_line_ns,
            ttwu_count,
            ttwu_local,
            levels,
            schedstat,
            latencies,
            trace: self.trace.take(),
            numa: self.numa_report(end),
            noise,
            arrivals: self.arrivals.as_ref().map_or_else(ArrivalStats::default, |a| a.stats),
            chan_waits: self.chan_waits,
        }
    }
}

/// A duration limit for messages: `10ms`, `1s`, `250us`, `7ns`.
pub(crate) fn fmt_dur(ns: u64) -> String {
    match ns {
        n if n % 1_000_000_000 == 0 => format!("{}s", n / 1_000_000_000),
        n if n % 1_000_000 == 0 => format!("{}ms", n / 1_000_000),
        n if n % 1_000 == 0 => format!("{}us", n / 1_000),
        n => format!("{n}ns"),
    }
}
