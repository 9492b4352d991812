//! STREAM with OpenMP (benchmark-workloads §10): T threads of one process,
//! each owning a static 1/T slice of the arrays, run Copy, Scale, Add and
//! Triad `ntimes` times; every kernel ends with the implicit barrier of
//! `#pragma omp parallel for`: libgomp's waiters spin (GOMP_SPINCOUNT pause
//! iterations) before they sleep on the futex, and the last arrival wakes the
//! sleepers (not WF_SYNC). The kernels are memory-bound (`Op::Mem`): their progress is the
//! bandwidth share the machine model grants per LLC and per node.
//!
//! Metric: bytes counted as STREAM counts them (16 B per element for Copy and
//! Scale, 24 B for Add and Triad) over the time of all phases, in MB/s (10^6 B);
//! `metric=best_copy` (`best_scale`, `best_add`, `best_triad`) is STREAM's own
//! "Best Rate MB/s" line: one kernel's bytes over its shortest time among
//! repetitions 2..NTIMES (the first is left out, as STREAM does), timed by
//! the master thread from before the parallel region to after its end
//! barrier (`ReqStart`/`ReqEnd` in histograms 0-3, one per kernel).

use super::{push_prog, start_task, Builtin, MARK_END, MARK_START};
use crate::params::{ParamDoc, Params};
use crate::{MetricSpec, Op, Workload, WorkloadError};

pub const BUILTIN: Builtin = Builtin {
    name: "stream",
    summary: "STREAM (OpenMP): T threads, Copy/Scale/Add/Triad with a barrier per kernel",
    metric: "bandwidth (MB/s over all kernels and repetitions, higher is better; best_* as STREAM prints)",
    params: &[
        ParamDoc { key: "threads", default: "cpus", help: "OMP_NUM_THREADS (default: all CPUs, as libgomp)" },
        ParamDoc { key: "array_size", default: "10000000", help: "STREAM_ARRAY_SIZE (elements of each of a, b, c)" },
        ParamDoc { key: "ntimes", default: "10", help: "NTIMES repetitions of the four kernels" },
        ParamDoc {
            key: "wait_policy",
            default: "unset",
            help: "OMP_WAIT_POLICY: unset (spin 300,000 pause iterations, then sleep), active (spin 30 billion) or passive (sleep at once)",
        },
        ParamDoc {
            key: "spincount",
            default: "policy",
            help: "GOMP_SPINCOUNT: pause iterations before a barrier waiter sleeps (overrides the policy's count)",
        },
        ParamDoc {
            key: "metric",
            default: "mean",
            help: "mean (all kernels and repetitions) or STREAM's Best Rate of one kernel: best_copy, best_scale, best_add, best_triad",
        },
        ParamDoc {
            key: "pause_ns",
            default: "47",
            help: "time of one spin iteration (load + pause), ns: 47 measured on the EPYC guest; ~4 on Westmere, ~40-50 on Skylake-SP",
        },
    ],
    build,
};

/// One iteration of libgomp's do_spin() loop (an atomic load and `pause`),
/// measured on the EPYC guest this project runs on (300,000 iterations in
/// 14.2 ms, best of 20; docs/CALIBRATION.md "STREAM").
const PAUSE_NS: u64 = 47;

/// Bytes per element counted by STREAM: Copy, Scale, Add, Triad.
pub const KERNEL_BYTES: [u64; 4] = [16, 16, 24, 24];
/// STREAM's kernels, in order.
const KERNEL_NAMES: [&str; 4] = ["copy", "scale", "add", "triad"];
const COUNTER_BYTES: u32 = 0;

fn build(p: &Params, nr_cpus: usize, _cores: &[Vec<u16>]) -> Result<Workload, WorkloadError> {
    let t = p.u64_in("threads", nr_cpus.max(1) as u64, 1, 100_000)? as u32;
    let n = p.u64_in("array_size", 10_000_000, 1, 1 << 40)?;
    let ntimes = p.u64_in("ntimes", 10, 1, 1_000_000)?;
    let policy = p.get("wait_policy").unwrap_or("unset");
    // libgomp initialize_env(): spin counts per OMP_WAIT_POLICY, and the
    // throttled counts used when there are more threads than available CPUs
    // (config/linux/wait.h do_wait()).
    let (count, throttled) = match policy {
        "unset" => (300_000u64, 100u64),
        "active" => (30_000_000_000, 1_000),
        "passive" => (0, 0),
        v => return Err(WorkloadError(format!("wait_policy={v:?}: expected unset, active or passive (OMP_WAIT_POLICY)"))),
    };
    let explicit = match p.get("spincount") {
        Some(_) => Some(p.u64_in("spincount", 0, 0, 1 << 50)?),
        None => None,
    };
    let count = match explicit {
        Some(n) => n,
        None if t as usize > nr_cpus.max(1) => throttled,
        None => count,
    };
    let count = if policy == "passive" { 0 } else { count };
    let pause_ns = p.u64_in("pause_ns", PAUSE_NS, 1, 10_000)?;
    // FIDELITY(F-801): one spin iteration costs pause_ns on every machine (a parameter, not the machine model's).
    let spin = count.saturating_mul(pause_ns);
    let params = vec![("threads".into(), t.to_string()), ("array_size".into(), n.to_string()), ("ntimes".into(), ntimes.to_string())];
    let best = match p.get("metric").unwrap_or("mean") {
        "mean" => None,
        m => match KERNEL_NAMES.iter().position(|k| m.strip_prefix("best_") == Some(k)) {
            Some(j) => Some(j),
            None => {
                return Err(WorkloadError(format!(
                    "metric={m:?}: expected mean, best_copy, best_scale, best_add or best_triad (STREAM's Best Rate of one kernel)"
                )))
            }
        },
    };
    if best.is_some() && ntimes < 2 {
        return Err(WorkloadError(format!(
            "ntimes={ntimes}: STREAM's best rate leaves out the first repetition, so it needs ntimes of at least 2"
        )));
    }
    let metric = match best {
        None => MetricSpec::ScaledRate {
            name: "bandwidth".into(),
            unit: "MB/s".into(),
            counter: COUNTER_BYTES,
            divisor: 1_000_000,
            start: Some(MARK_START),
            end: Some(MARK_END),
        },
        Some(j) => MetricSpec::BestRate {
            name: format!("best_{}", KERNEL_NAMES[j]),
            unit: "MB/s".into(),
            hist: j as u32,
            amount: n * KERNEL_BYTES[j],
            divisor: 1_000_000,
        },
    };
    let mut w = Workload::new("stream", params, metric, false, 2);
    for key in ["wait_policy", "spincount", "pause_ns", "metric"] {
        if let Some(v) = p.get(key) {
            w.params.push((key.into(), v.to_string()));
        }
    }
    for j in 0..t {
        // schedule(static): the first n % t threads get one more element.
        let elems = n / t as u64 + u64::from((j as u64) < n % t as u64);
        let mut prog = Vec::new();
        if j == 0 {
            prog.push(Op::Mark { id: MARK_START });
        }
        // One repetition of the four kernels; `timed`: the master stamps each
        // kernel's time (STREAM's times[k][j] = mysecond() around the region).
        let repetition = |prog: &mut Vec<Op>, timed: bool| {
            for (k, b) in KERNEL_BYTES.into_iter().enumerate() {
                // Each `#pragma omp parallel for` is a parallel region: the team's
                // threads wait at the pool's dock until the master starts the region
                // (gomp_team_start() releases threads_dock), and at the region's end
                // barrier (gomp_team_barrier_wait_final()); both spin, then sleep.
                let barrier = |id| if spin > 0 { Op::SpinBarrier { id, parties: t, spin } } else { Op::Barrier { id, parties: t } };
                if timed {
                    prog.push(Op::ReqStart { hist: k as u32 });
                }
                prog.push(barrier(1));
                prog.push(Op::Mem { bytes: elems * b });
                prog.push(barrier(0));
                if timed {
                    prog.push(Op::ReqEnd { hist: k as u32 });
                }
                if j == 0 {
                    prog.push(Op::Count { id: COUNTER_BYTES, n: n * b });
                }
            }
        };
        if best.is_some() && j == 0 {
            // The first repetition is not timed (STREAM's k = 0).
            repetition(&mut prog, false);
            prog.push(Op::Loop { count: ntimes - 1 });
            repetition(&mut prog, true);
        } else {
            prog.push(Op::Loop { count: ntimes });
            repetition(&mut prog, false);
        }
        prog.push(Op::EndLoop);
        if j == 0 {
            prog.push(Op::Mark { id: MARK_END });
        }
        prog.push(Op::Exit { cost: super::costs::EXIT_NS });
        let pi = push_prog(&mut w, prog);
        w.tasks.push(start_task(format!("stream-{j}"), pi, 0));
    }
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn task_graph() {
        let w = crate::build("stream", &Params::parse("threads=4,array_size=1001").unwrap(), 12, &[]).unwrap();
        assert_eq!(w.tasks.len(), 4);
        assert!(w.tasks.iter().all(|t| t.mm == 0));
        let barriers =
            |id| w.programs[1].iter().filter(|o| matches!(o, Op::SpinBarrier { id: i, parties: 4, spin: 14_100_000 } if *i == id)).count();
        assert_eq!((barriers(1), barriers(0)), (4, 4), "a dock and an end barrier per kernel, 300,000 spins of 47 ns first");
        // thread 0 gets the extra element
        assert_eq!(w.programs[0][3], Op::Mem { bytes: 251 * 16 });
        assert_eq!(crate::build("stream", &Params::default(), 12, &[]).unwrap().tasks.len(), 12);
        // best_*: the master leaves the first repetition untimed and stamps
        // every kernel of the others; the team's programs are unchanged.
        let b = crate::build("stream", &Params::parse("threads=4,ntimes=3,metric=best_triad").unwrap(), 12, &[]).unwrap();
        assert_eq!(
            b.metric,
            MetricSpec::BestRate { name: "best_triad".into(), unit: "MB/s".into(), hist: 3, amount: 24 * 10_000_000, divisor: 1_000_000 }
        );
        let first_loop = b.programs[0].iter().position(|o| matches!(o, Op::Loop { .. })).unwrap();
        assert!(!b.programs[0][..first_loop].iter().any(|o| matches!(o, Op::ReqStart { .. })), "repetition 1 untimed");
        assert_eq!(b.programs[0][first_loop], Op::Loop { count: 2 });
        assert_eq!(b.programs[0].iter().filter(|o| matches!(o, Op::ReqEnd { .. })).count(), 4);
        assert_eq!(b.programs[1], crate::build("stream", &Params::parse("threads=4,ntimes=3").unwrap(), 12, &[]).unwrap().programs[1]);
        assert!(crate::build("stream", &Params::parse("ntimes=1,metric=best_copy").unwrap(), 12, &[]).is_err());
        assert!(crate::build("stream", &Params::parse("metric=best").unwrap(), 12, &[]).is_err());
    }

    #[test]
    fn wait_policy_sets_the_spin() {
        let spin_of = |set: &str| {
            let w = crate::build("stream", &Params::parse(set).unwrap(), 4, &[]).unwrap();
            w.programs[0].iter().find_map(|o| match o {
                Op::SpinBarrier { spin, .. } => Some(*spin),
                Op::Barrier { .. } => Some(0),
                _ => None,
            })
        };
        assert_eq!(spin_of("threads=4,wait_policy=passive"), Some(0));
        assert_eq!(spin_of("threads=4,wait_policy=active,pause_ns=1"), Some(30_000_000_000));
        // more threads than CPUs: libgomp's throttled count
        assert_eq!(spin_of("threads=8,pause_ns=10"), Some(1_000));
        assert_eq!(spin_of("threads=8,wait_policy=active,pause_ns=10"), Some(10_000));
        assert_eq!(spin_of("threads=4,spincount=10,pause_ns=10"), Some(100));
        assert!(crate::build("stream", &Params::parse("wait_policy=lazy").unwrap(), 4, &[]).is_err());
    }
}
