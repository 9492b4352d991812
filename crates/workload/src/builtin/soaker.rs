//! cpu-soaker: N CPU-bound tasks, optionally with a run/sleep duty cycle
//! (the threads of seed 002's experiment). The counter counts completed
//! run periods; without sleep a period is 1 ms of work.

use super::{start_task, Builtin, COUNTER_OPS};
use crate::params::{ParamDoc, Params};
use crate::{MetricSpec, Op, Workload, WorkloadError};

pub const BUILTIN: Builtin = Builtin {
    name: "soaker",
    summary: "cpu-soaker: N CPU-bound tasks, optional run/sleep duty cycle",
    metric: "periods/s (completed run periods per second, all tasks)",
    params: &[
        ParamDoc { key: "tasks", default: "1", help: "number of soaker tasks" },
        ParamDoc { key: "run_us", default: "1000", help: "work per period (us)" },
        ParamDoc { key: "sleep_us", default: "0", help: "sleep per period (us); 0 = always runnable" },
        ParamDoc { key: "threads", default: "1", help: "1: threads of one process; 0: separate processes" },
    ],
    build,
};

fn build(p: &Params, _nr_cpus: usize, _cores: &[Vec<u16>]) -> Result<Workload, WorkloadError> {
    let tasks = p.u64_in("tasks", 1, 1, 100_000)? as u32;
    let run_us = p.u64_in("run_us", 1000, 1, 10_000_000)?;
    let sleep_us = p.u64_in("sleep_us", 0, 0, 10_000_000)?;
    let threads = p.flag("threads", true)?;
    let mut prog = vec![Op::Loop { count: u64::MAX }, Op::Run { ns: run_us * 1000 }];
    if sleep_us > 0 {
        prog.push(Op::Sleep { ns: sleep_us * 1000 });
    }
    prog.push(Op::Count { id: COUNTER_OPS, n: 1 });
    prog.push(Op::EndLoop);
    let params = vec![
        ("tasks".into(), tasks.to_string()),
        ("run_us".into(), run_us.to_string()),
        ("sleep_us".into(), sleep_us.to_string()),
        ("threads".into(), (threads as u8).to_string()),
    ];
    let metric =
        MetricSpec::Rate { name: "periods_per_sec".into(), unit: "periods/s".into(), counter: COUNTER_OPS, start: None, end: None };
    let mut w = Workload::new("soaker", params, metric, true, 0);
    w.programs = vec![prog];
    w.tasks = (0..tasks).map(|i| start_task(format!("cpu-soaker-{i}"), 0, if threads { 0 } else { i })).collect();
    Ok(w)
}
