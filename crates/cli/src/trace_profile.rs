//! `schedlab profile` (trace_profile: `profile` is the kernel-profile import in main.rs): per-role CPU, switches, wakeups, migrations and run
//! delay of a recorded trace, of a simulated run (`--run`), or both side by
//! side (`--vs`: the trace imported and simulated).

use anyhow::{bail, Result};
use std::path::PathBuf;

#[derive(clap::Args, Clone)]
pub struct ProfileArgs {
    /// A recorded trace (any format `schedlab import` reads).
    pub trace: Option<PathBuf>,
    /// Profile a simulated run of --workload instead of a trace.
    #[arg(long)]
    pub run: bool,
    /// Import TRACE, simulate it on --machine with --kernel, and print real and simulated side by side.
    #[arg(long)]
    pub vs: bool,
    /// What one op is: every per-op figure is a total divided by this (e.g. 20000 for `perf bench sched pipe -l 20000`).
    #[arg(long, default_value_t = 1)]
    pub ops: u64,
    /// Print JSON (one profile, or {"real": ..., "sim": ...} with --vs).
    #[arg(long)]
    pub json: bool,
    /// Root pid of the traced process tree (default: the `schedlab record` root, else every task).
    #[arg(long)]
    pub pid: Option<u32>,
    /// Use a trace that lost events.
    #[arg(long)]
    pub allow_lost: bool,
    /// Workload to simulate with --run (built-in or file).
    #[arg(long, default_value = "hackbench")]
    pub workload: String,
    /// Built-in workload parameters for --run.
    #[arg(long = "set")]
    pub set: Vec<String>,
    /// Machine for the simulation (--run, --vs).
    #[arg(long, default_value = "local")]
    pub machine: String,
    /// Kernel profile for the simulation (--run, --vs).
    #[arg(long, default_value = "v6.12")]
    pub kernel: String,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Op budget of the imported workload for --vs (a smaller one cuts the trace, and the comparison is then of a prefix).
    #[arg(long, default_value_t = 1_000_000)]
    pub max_ops: usize,
}

/// Simulate `w` and profile the ftrace text of the run.
pub fn simulate(machine: &str, kernel: &str, seed: u64, w: &schedlab_workload::Workload, ops: u64) -> Result<schedlab_trace::Profile> {
    let m = crate::load_machine(machine)?;
    let k = crate::load_kernel(kernel, None)?;
    let cfg = schedlab_engine::SimConfig {
        seed,
        duration_ns: if w.time_bounded { Some(1_000_000_000) } else { None },
        schedstat: false,
        switch_log: false,
        trace: true,
        model: Default::default(),
    };
    let res = schedlab_engine::run(&m, k, w, &cfg);
    if res.blocked_forever > 0 {
        eprintln!("schedlab: warning: the simulated run ended with {} tasks blocked forever", res.blocked_forever);
    }
    let tr = res.trace.as_deref().ok_or_else(|| anyhow::anyhow!("the engine returned no trace"))?;
    let mut buf = Vec::new();
    crate::trace::ftrace::write(tr, &mut buf)?;
    let text = String::from_utf8(buf)?;
    let (_, a) = schedlab_trace::analyse(&text, None, false).map_err(anyhow::Error::msg)?;
    Ok(schedlab_trace::Profile::new(&a, &format!("simulated {} on {machine} with {kernel} (seed {seed})", w.name), ops))
}

pub fn profile(a: &ProfileArgs) -> Result<()> {
    if a.run {
        if a.trace.is_some() || a.vs {
            bail!("--run profiles a simulation of --workload; give either --run or a TRACE (with --vs to simulate the trace)");
        }
        let m = crate::load_machine(&a.machine)?;
        let params = schedlab_workload::Params::parse(&a.set.join(",")).map_err(|e| anyhow::anyhow!("{e}"))?;
        let w = crate::load_workload(&a.workload, &params, &m, &crate::cores_of(&m))?;
        let p = simulate(&a.machine, &a.kernel, a.seed, &w, a.ops)?;
        return print(&p, a.json);
    }
    let Some(trace) = &a.trace else { bail!("give a TRACE file (schedlab record -o FILE -- CMD), or --run to profile a simulation") };
    if !a.vs {
        let text = crate::import::read_trace(trace)?;
        let (p, an) = schedlab_trace::analyse(&text, a.pid, a.allow_lost).map_err(|e| anyhow::anyhow!("{}: {e}", trace.display()))?;
        let src = format!("{} ({})", trace.display(), p.format.map_or("?", |f| f.name()));
        return print(&schedlab_trace::Profile::new(&an, &src, a.ops), a.json);
    }
    let (p, an, imp) = crate::import::import_file(trace, a.pid, a.allow_lost, a.max_ops)?;
    for n in &imp.notes {
        eprintln!("schedlab: note: {n}");
    }
    let real = schedlab_trace::Profile::new(&an, &format!("{} ({})", trace.display(), p.format.map_or("?", |f| f.name())), a.ops);
    let sim = simulate(&a.machine, &a.kernel, a.seed, &imp.workload, a.ops)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "real": real, "sim": sim }))?);
    } else {
        print!("{}", schedlab_trace::Profile::vs(&real, &sim));
    }
    Ok(())
}

fn print(p: &schedlab_trace::Profile, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(p)?);
    } else {
        print!("{}", p.text());
    }
    Ok(())
}
