//! A trace as a workload file: every traced task becomes a task spec whose
//! program replays its recorded behaviour, in order.
//!
//! Mapping (the op language of docs/workload-format.md):
//! - a CPU burst -> `run ns=` (CPU time at nominal speed);
//! - a block ended by a traced task -> `sem_wait` on the blocked task's own
//!   semaphore, and a `sem_post` on it in the waker's program at the point of
//!   the waking; the semaphore is sync when most of its recorded wakeups were
//!   inferred sync (model.rs). One semaphore has one waiter, so the k-th wait
//!   takes the k-th post: the real order is a valid schedule, the replay
//!   cannot deadlock;
//! - a block ended by an interrupt, a timer, the idle task or an untraced
//!   task -> `sleep ns=` of the observed blocked time;
//! - fork -> `fork spec=` of the child (a `start = false` task); exit -> the
//!   end of the program;
//! - threads share an `mm` when the trace has tgids (the record-tgid column,
//!   perf `PID/TID`); otherwise every task is its own process;
//! - periodic stretches (the same op sequence repeated) are folded into
//!   `loop count=N`; a burst repeated at least 8 times whose recorded
//!   durations spread by 5% or more becomes `run_dist` with their mean and
//!   median (`run_dist()` below), other bursts and sleeps keep their mean;
//! - when the folded file would exceed the op budget, only a prefix of the
//!   trace (all tasks cut at one instant) is kept, and the file says so.
//!
//! Mark 0 at the start and mark 1 at the end of the first task's program
//! give the `elapsed` metric.
// FIDELITY(F-701): replayed bursts are fixed CPU times: no cache or frequency effects of the real run carry over beyond their mean.
// FIDELITY(F-702): only blocking wakeups are replayed (a write to a reader that is running leaves no trace event); affinity, nice and cgroups are not imported.
// FIDELITY(F-703): a folded loop's bursts keep their mean and median and a three-point piecewise-linear shape of their spread (run_dist), not the recorded distribution or the order of long and short bursts; its sleeps keep only their mean.

use crate::model::{Analysis, Source, Step};
use schedlab_workload::{MetricSpec, Op, SemSpec, TaskSpec, Workload};
use std::collections::BTreeMap;

/// Import options.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    pub name: String,
    /// Most ops (after folding, over all distinct programs) the file may hold.
    pub max_ops: usize,
    /// Longest period (in ops) loop detection tries.
    pub max_period: usize,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions { name: "imported".into(), max_ops: 20_000, max_period: 48 }
    }
}

/// The result: the workload, and notes for the user (cuts, dropped parts).
pub struct Imported {
    pub workload: Workload,
    pub notes: Vec<String>,
    /// Ops before and after folding.
    pub raw_ops: usize,
    pub folded_ops: usize,
}

/// Replay ops of one task before folding; durations are f64 for averaging.
#[derive(Clone, Copy, Debug, PartialEq)]
enum ROp {
    Run(f64),
    Sleep(f64),
    Post(u32),
    Wait(u32),
    Fork(u32),
    Mark(u32),
}

impl ROp {
    fn key(&self) -> (u8, u32) {
        match *self {
            ROp::Run(_) => (0, 0),
            ROp::Sleep(_) => (1, 0),
            ROp::Post(s) => (2, s),
            ROp::Wait(s) => (3, s),
            ROp::Fork(s) => (4, s),
            ROp::Mark(s) => (5, s),
        }
    }
    fn op(&self) -> Op {
        let ns = |x: f64| (x.round() as u64).max(1);
        match *self {
            ROp::Run(x) => Op::Run { ns: ns(x) },
            ROp::Sleep(x) => Op::Sleep { ns: ns(x).min(schedlab_workload::file::MAX_TIME_NS) },
            ROp::Post(s) => Op::SemPost { sem: s, n: 1 },
            ROp::Wait(s) => Op::SemWait { sem: s },
            ROp::Fork(s) => Op::Fork { spec: s, cost: 0 },
            ROp::Mark(id) => Op::Mark { id },
        }
    }
}

/// Fewest repetitions of a folded burst for which its spread is kept.
const DIST_MIN_REPS: usize = 8;
/// Spread (hi - lo, relative to the median) below which a burst stays a fixed `run`.
const DIST_MIN_SPREAD: f64 = 0.05;

/// The recorded durations of one burst of a folded loop as `run_dist`, with
/// their mean and median: `mid` = the median; `lo` such that the lower half,
/// uniform on [lo, mid], has the recorded lower half's mean; `hi` solved from
/// the mean, `(lo + 2 mid + hi) / 4`. When that puts `hi` below the median
/// (more weight below the median than above), `hi = mid` and `lo` is solved
/// instead. None when the spread is small or the shape cannot keep both
/// (the caller then writes the mean).
fn run_dist(v: &mut [f64], mean: f64) -> Option<Op> {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    let mid = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
    let lower = &v[..n / 2];
    let lower_mean = lower.iter().sum::<f64>() / lower.len().max(1) as f64;
    let mut lo = (2.0 * lower_mean - mid).max(0.0);
    let mut hi = 4.0 * mean - 2.0 * mid - lo;
    if hi < mid {
        hi = mid;
        lo = 4.0 * mean - 3.0 * mid;
    }
    let ok = |x: f64| x.is_finite() && x >= 0.0 && x <= u32::MAX as f64;
    if !(ok(lo) && ok(hi) && lo <= mid && mid <= hi) || hi - lo < DIST_MIN_SPREAD * mid {
        return None;
    }
    let (lo, mid, hi) = (lo.round() as u32, (mid.round() as u32).max(1), hi.round() as u32);
    Some(Op::RunDist { lo: lo.min(mid), mid, hi: hi.max(mid) })
}

/// Fold repeated stretches: greedy, at each position the period (<= max_p)
/// that covers the most ops with at least two repetitions.
fn fold(ops: &[ROp], max_p: usize) -> Vec<Op> {
    let keys: Vec<(u8, u32)> = ops.iter().map(|o| o.key()).collect();
    let n = keys.len();
    let mut out = Vec::new();
    let mut i = 0;
    while i < n {
        let mut best = (0usize, 0usize); // (covered, period)
        for p in 1..=max_p.min((n - i) / 2) {
            // Repetitions of keys[i..i+p].
            let mut len = p;
            while i + len < n && keys[i + len] == keys[i + len - p] {
                len += 1;
            }
            let reps = len / p;
            if reps >= 2 && reps * p > best.0 {
                best = (reps * p, p);
            }
        }
        let (covered, p) = best;
        // A loop costs two ops; fold only when it saves some.
        if p > 0 && covered >= p + 3 {
            let reps = covered / p;
            out.push(Op::Loop { count: reps as u64 });
            for k in 0..p {
                let o = ops[i + k];
                let samples = || {
                    (0..reps).map(|r| match ops[i + r * p + k] {
                        ROp::Run(x) | ROp::Sleep(x) => x,
                        _ => 0.0,
                    })
                };
                let mean = samples().sum::<f64>() / reps as f64;
                out.push(match o {
                    ROp::Run(_) if reps >= DIST_MIN_REPS => {
                        let mut v: Vec<f64> = samples().collect();
                        run_dist(&mut v, mean).unwrap_or_else(|| ROp::Run(mean).op())
                    }
                    ROp::Run(_) => ROp::Run(mean).op(),
                    ROp::Sleep(_) => ROp::Sleep(mean).op(),
                    o => o.op(),
                });
            }
            out.push(Op::EndLoop);
            i += covered;
        } else {
            out.push(ops[i].op());
            i += 1;
        }
    }
    out
}

/// Per task, the replay ops for the prefix of the trace up to `cut` (ns).
fn replay_ops(a: &Analysis, sem_of: &[Option<u32>], cut: u64) -> Vec<Vec<ROp>> {
    let mut progs = Vec::with_capacity(a.tasks.len());
    for (ti, t) in a.tasks.iter().enumerate() {
        let mut v: Vec<ROp> = Vec::new();
        for s in &t.steps {
            match *s {
                Step::Run { ns, ts } if ts <= cut => {
                    let ns = ns.min(cut - ts).max(1) as f64;
                    match v.last_mut() {
                        Some(ROp::Run(x)) => *x += ns,
                        _ => v.push(ROp::Run(ns)),
                    }
                }
                Step::Post { to, ts, .. } if ts <= cut => {
                    if let Some(sem) = sem_of[to] {
                        v.push(ROp::Post(sem));
                    }
                }
                Step::Block { ts, wake: Some((w, src)) } if w <= cut => match (src, sem_of[ti]) {
                    (Source::Task(_), Some(sem)) => v.push(ROp::Wait(sem)),
                    _ => v.push(ROp::Sleep(w.saturating_sub(ts).max(1) as f64)),
                },
                Step::Fork { child, ts } if ts <= cut => v.push(ROp::Fork(child as u32)),
                _ => {}
            }
        }
        progs.push(v);
    }
    progs
}

/// Distinct programs of a set of task op lists (identical lists share one).
fn programs(folded: Vec<Vec<Op>>) -> (Vec<Vec<Op>>, Vec<u32>) {
    let mut uniq: BTreeMap<String, u32> = BTreeMap::new();
    let mut progs = Vec::new();
    let mut of_task = Vec::new();
    for p in folded {
        let key = format!("{p:?}");
        let id = *uniq.entry(key).or_insert_with(|| {
            progs.push(p);
            progs.len() as u32 - 1
        });
        of_task.push(id);
    }
    (progs, of_task)
}

pub fn import(a: &Analysis, opt: &ImportOptions) -> Result<Imported, String> {
    if a.tasks.is_empty() {
        return Err("the trace has no tasks to import (no sched_switch of a traced task)".into());
    }
    let mut notes = Vec::new();
    // A semaphore for every task that some traced task woke out of a block.
    let mut sem_of: Vec<Option<u32>> = vec![None; a.tasks.len()];
    let mut sync_votes: Vec<(u64, u64)> = Vec::new();
    for t in &a.tasks {
        for s in &t.steps {
            if let Step::Post { to, sync, .. } = *s {
                let id = *sem_of[to].get_or_insert_with(|| {
                    sync_votes.push((0, 0));
                    sync_votes.len() as u32 - 1
                });
                let v = &mut sync_votes[id as usize];
                v.0 += 1;
                v.1 += sync as u64;
            }
        }
    }
    // The first task that was not forked inside the trace carries the marks.
    let starts: Vec<bool> = a.tasks.iter().map(|t| t.parent.is_none()).collect();
    let first = starts.iter().position(|&s| s).ok_or("every traced task was forked by another: no task exists at the start")?;
    let build = |cut: u64| -> Vec<Vec<Op>> {
        let mut r = replay_ops(a, &sem_of, cut);
        r[first].insert(0, ROp::Mark(0));
        r[first].push(ROp::Mark(1));
        r.iter().map(|ops| fold(ops, opt.max_period)).collect()
    };
    let total = |f: &Vec<Vec<Op>>| programs(f.clone()).0.iter().map(|p| p.len()).sum::<usize>();
    let raw_ops = replay_ops(a, &sem_of, u64::MAX).iter().map(|v| v.len()).sum::<usize>();
    let mut folded = build(u64::MAX);
    if total(&folded) > opt.max_ops {
        // Binary search the latest cut that fits.
        let (mut lo, mut hi) = (a.start_ns, a.end_ns);
        while hi - lo > 1_000 {
            let mid = lo + (hi - lo) / 2;
            if total(&build(mid)) > opt.max_ops {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        folded = build(lo);
        notes.push(format!(
            "the folded trace needs more than {} ops: only its first {:.3} s (of {:.3} s) are imported (raise --max-ops to keep more)",
            opt.max_ops,
            (lo - a.start_ns) as f64 / 1e9,
            (a.end_ns - a.start_ns) as f64 / 1e9
        ));
    }
    let folded_ops = total(&folded);
    let (progs, of_task) = programs(folded);
    // mm: one per tgid, in order of first appearance.
    let mut mm_of: BTreeMap<u32, u32> = BTreeMap::new();
    let tasks: Vec<TaskSpec> = a
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let n = mm_of.len() as u32;
            let mm = *mm_of.entry(t.tgid).or_insert(n);
            TaskSpec {
                name: t.comm.clone(),
                program: of_task[i],
                mm,
                nice: 0,
                cpus: None,
                start: starts[i],
                group: 0,
                footprint_kib: None,
                shared: None,
                // The recorded sleeps are the blocked times the trace saw,
                // the slack and the expiry delay included.
                timer_slack_ns: 0,
            }
        })
        .collect();
    let sems = sync_votes.iter().map(|&(n, s)| SemSpec { initial: 0, sync: s * 2 > n, barging: false }).collect();
    let w = Workload {
        name: opt.name.clone(),
        params: vec![
            ("source".into(), "schedlab import".into()),
            ("tasks".into(), a.tasks.len().to_string()),
            ("trace_seconds".into(), format!("{:.6}", (a.end_ns - a.start_ns) as f64 / 1e9)),
        ],
        programs: progs,
        tasks,
        channels: vec![],
        sems,
        metric: MetricSpec::Elapsed { name: "elapsed".into(), start: 0, end: 1 },
        time_bounded: false,
        jitter_pct: 0,
        groups: vec![],
        memory: vec![],
        arrivals: None,
    };
    w.validate().map_err(|e| e.to_string())?;
    Ok(Imported { workload: w, notes, raw_ops, folded_ops })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_finds_the_period_and_averages() {
        let mut ops = vec![ROp::Mark(0)];
        for k in 0..10 {
            ops.extend([ROp::Run(1000.0 + k as f64 * 2.0), ROp::Post(1), ROp::Wait(0)]);
        }
        ops.push(ROp::Run(5.0));
        let f = fold(&ops, 8);
        assert_eq!(
            f,
            vec![
                Op::Mark { id: 0 },
                Op::Loop { count: 10 },
                Op::Run { ns: 1009 },
                Op::SemPost { sem: 1, n: 1 },
                Op::SemWait { sem: 0 },
                Op::EndLoop,
                Op::Run { ns: 5 }
            ]
        );
        // Too short to pay for the loop ops: left as is.
        let f = fold(&[ROp::Post(1), ROp::Post(1)], 8);
        assert_eq!(f.len(), 2);
    }

    #[test]
    fn varying_bursts_become_distributions_with_their_mean_and_median() {
        // A right-skewed burst: mostly ~100 us, every fourth one 400 us.
        let mut ops = Vec::new();
        let mut rec = Vec::new();
        for k in 0..40 {
            let x = if k % 4 == 3 { 400_000.0 } else { 100_000.0 + (k % 3) as f64 * 5_000.0 };
            rec.push(x);
            ops.extend([ROp::Run(x), ROp::Sleep(50_000.0 + k as f64)]);
        }
        let f = fold(&ops, 8);
        assert_eq!(f[0], Op::Loop { count: 40 });
        let Op::RunDist { lo, mid, hi } = f[1] else { panic!("expected run_dist, got {:?}", f[1]) };
        let mean = rec.iter().sum::<f64>() / rec.len() as f64;
        let model_mean = (lo as f64 + 2.0 * mid as f64 + hi as f64) / 4.0;
        assert!((model_mean / mean - 1.0).abs() < 1e-4, "mean {model_mean} vs recorded {mean}");
        rec.sort_by(|a, b| a.total_cmp(b));
        assert_eq!(mid as f64, (rec[19] + rec[20]) / 2.0);
        assert!(lo <= mid && hi > 2 * mid, "{lo} {mid} {hi}");
        // Sleeps keep their mean.
        assert_eq!(f[2], Op::Sleep { ns: 50_020 });
        // Left-skewed: hi stays at the median, lo moves down to keep the mean.
        let mut ops = Vec::new();
        for k in 0..20 {
            ops.extend([ROp::Run(if k % 2 == 0 { 10_000.0 } else { 100_000.0 + k as f64 }), ROp::Post(0)]);
        }
        let f = fold(&ops, 8);
        let m = match f[1] {
            Op::RunDist { lo, mid, hi } => {
                assert!(lo <= mid && mid <= hi);
                (lo as f64 + 2.0 * mid as f64 + hi as f64) / 4.0
            }
            Op::Run { ns } => ns as f64,
            ref o => panic!("{o:?}"),
        };
        assert!((m / 55_005.0 - 1.0).abs() < 1e-3, "{m}");
        // Fewer than DIST_MIN_REPS repetitions: the mean.
        let mut ops = Vec::new();
        for k in 0..5 {
            ops.extend([ROp::Run(1000.0 * (k + 1) as f64), ROp::Post(0)]);
        }
        assert_eq!(fold(&ops, 8)[1], Op::Run { ns: 3000 });
    }
}
