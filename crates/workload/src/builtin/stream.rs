//! STREAM with OpenMP (benchmark-workloads §10): T threads of one process,
//! each owning a static 1/T slice of the arrays, run Copy, Scale, Add and
//! Triad `ntimes` times; every kernel ends with the implicit barrier of
//! `#pragma omp parallel for` (a futex wakeup after libgomp's spin: not
//! WF_SYNC). The kernels are memory-bound (`Op::Mem`): their progress is the
//! bandwidth share the machine model grants per LLC and per node.
//!
//! Metric: bytes counted as STREAM counts them (16 B per element for Copy and
//! Scale, 24 B for Add and Triad) over the time of all phases, in MB/s (10^6 B).

use super::{push_prog, start_task, Builtin, MARK_END, MARK_START};
use crate::params::{ParamDoc, Params};
use crate::{MetricSpec, Op, Workload, WorkloadError};

pub const BUILTIN: Builtin = Builtin {
    name: "stream",
    summary: "STREAM (OpenMP): T threads, Copy/Scale/Add/Triad with a barrier per kernel",
    metric: "bandwidth (MB/s over all kernels and repetitions, higher is better)",
    params: &[
        ParamDoc { key: "threads", default: "cpus", help: "OMP_NUM_THREADS (default: all CPUs, as libgomp)" },
        ParamDoc { key: "array_size", default: "10000000", help: "STREAM_ARRAY_SIZE (elements of each of a, b, c)" },
        ParamDoc { key: "ntimes", default: "10", help: "NTIMES repetitions of the four kernels" },
    ],
    build,
};

/// Bytes per element counted by STREAM: Copy, Scale, Add, Triad.
pub const KERNEL_BYTES: [u64; 4] = [16, 16, 24, 24];
const COUNTER_BYTES: u32 = 0;

// FIDELITY(F-104): bytes over the whole timed region (mean rate), not best-of-NTIMES.
fn build(p: &Params, nr_cpus: usize, _cores: &[Vec<u16>]) -> Result<Workload, WorkloadError> {
    let t = p.u64_in("threads", nr_cpus.max(1) as u64, 1, 100_000)? as u32;
    let n = p.u64_in("array_size", 10_000_000, 1, 1 << 40)?;
    let ntimes = p.u64_in("ntimes", 10, 1, 1_000_000)?;
    let mut w = Workload {
        memory: Vec::new(),
        name: "stream".into(),
        params: vec![("threads".into(), t.to_string()), ("array_size".into(), n.to_string()), ("ntimes".into(), ntimes.to_string())],
        programs: Vec::new(),
        tasks: Vec::new(),
        channels: Vec::new(),
        sems: Vec::new(),
        metric: MetricSpec::ScaledRate {
            name: "bandwidth".into(),
            unit: "MB/s".into(),
            counter: COUNTER_BYTES,
            divisor: 1_000_000,
            start: Some(MARK_START),
            end: Some(MARK_END),
        },
        time_bounded: false,
        groups: Vec::new(),
        jitter_pct: 2,
    };
    for j in 0..t {
        // schedule(static): the first n % t threads get one more element.
        let elems = n / t as u64 + u64::from((j as u64) < n % t as u64);
        let mut prog = Vec::new();
        if j == 0 {
            prog.push(Op::Mark { id: MARK_START });
        }
        prog.push(Op::Loop { count: ntimes });
        for b in KERNEL_BYTES {
            prog.push(Op::Mem { bytes: elems * b });
            prog.push(Op::Barrier { id: 0, parties: t });
            if j == 0 {
                prog.push(Op::Count { id: COUNTER_BYTES, n: n * b });
            }
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
        let barriers = w.programs[1].iter().filter(|o| matches!(o, Op::Barrier { id: 0, parties: 4 })).count();
        assert_eq!(barriers, 4, "one barrier per kernel");
        // thread 0 gets the extra element
        assert_eq!(w.programs[0][2], Op::Mem { bytes: 251 * 16 });
        assert_eq!(crate::build("stream", &Params::default(), 12, &[]).unwrap().tasks.len(), 12);
    }
}
