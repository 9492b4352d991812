//! `schedlab bench`: fixed scenarios measuring simulator speed (never run in tests).
//!
//! The default set is the four engine scenarios the README shows. `--suite scale`
//! runs the side-by-side comparison with the sched_ext simulator (issue 21):
//! strict ping-pong on flat 4..128-CPU machines, a sleep/wake workload (4 tasks
//! per CPU, run 100 us, sleep 300 us) on one-LLC machines of 4..1024 CPUs, and
//! hackbench on a 1024-CPU machine, each with switches per wall second,
//! simulated seconds per wall second, ns per switch and peak memory.

use crate::{load_kernel_patched, load_machine, load_workload, prepare, Prepared, RunArgs};
use anyhow::{bail, Context, Result};
use schedlab_engine::SimConfig;
use schedlab_machine::Machine;
use schedlab_workload::Params;
use std::time::Instant;

/// Where a scenario's machine comes from.
#[derive(Clone, Copy)]
enum Mach {
    Preset(&'static str),
    /// laptop-4c8t's costs and idle states, `n` CPUs without SMT in one LLC, one node.
    Flat(u32),
    /// zen3-2s-nps1 with `n` packages (one NUMA node each, 128 CPUs each, SLIT 10/32).
    Zen3Packages(u32),
}

/// Where a scenario's workload comes from.
#[derive(Clone, Copy)]
enum Wl {
    /// A built-in workload with `--set` parameters.
    Builtin(&'static str, &'static str),
    /// A workload file's text.
    File(&'static str),
}

struct Scenario {
    name: &'static str,
    machine: Mach,
    kernel: &'static str,
    workload: Wl,
    duration: Option<&'static str>,
}

const fn sc(name: &'static str, machine: Mach, kernel: &'static str, workload: Wl, duration: Option<&'static str>) -> Scenario {
    Scenario { name, machine, kernel, workload, duration }
}

const ENGINE: &[Scenario] = &[
    sc("hackbench-g16-l1000-zen3-nps1-v6.6", Mach::Preset("zen3-2s-nps1"), "v6.6", Wl::Builtin("hackbench", "groups=16,loops=1000"), None),
    sc(
        "hackbench-pipe-g4-l1000-x86-12-v3.10",
        Mach::Preset("x86-12"),
        "v3.10",
        Wl::Builtin("hackbench", "groups=4,loops=1000,pipe=1"),
        None,
    ),
    sc("pipe-l200000-laptop-v6.12", Mach::Preset("laptop-4c8t"), "v6.12", Wl::Builtin("pipe", "loops=200000"), None),
    sc("context_switch1-p168-spr112-v6.12", Mach::Preset("spr-112"), "v6.12", Wl::Builtin("context_switch1", "pairs=168"), Some("200ms")),
];

/// Strict ping-pong: A runs 10 us, writes pipe 0, blocks on pipe 1; B blocks on
/// pipe 0, runs 10 us, writes pipe 1. No syscall cost; one task runnable at a time.
const PINGPONG: &str = r#"
format = 1
name = "pingpong-10us"
time_bounded = true
jitter_pct = 0

[metric]
kind = "rate"
name = "round_trips"
unit = "rt/s"
counter = 0

[[channel]]
repeat = 2
capacity = 16384
sync = true
kind = "pipe"
msgs_per_page = 1024

[[program]]
ops = ["loop count=inf", "run ns=10us", "write chan=0 cost=0", "read chan=1 cost=0", "count id=0 n=1", "end_loop"]

[[program]]
ops = ["loop count=inf", "read chan=0 cost=0", "run ns=10us", "write chan=1 cost=0", "end_loop"]

[[task]]
name = "ping"
program = 0
mm = 0

[[task]]
name = "pong"
program = 1
mm = 0
"#;

/// Sleep/wake on `n` CPUs: 4 tasks per CPU, simulated time scaled so each run
/// has ~410,000 switches (10,000 switches per CPU per simulated second).
macro_rules! sleepwake {
    ($n:literal, $tasks:literal, $dur:literal) => {
        sc(
            concat!("sleepwake-flat", $n, "-v6.12"),
            Mach::Flat($n),
            "v6.12",
            Wl::Builtin("soaker", concat!("tasks=", $tasks, ",run_us=100,sleep_us=300")),
            Some($dur),
        )
    };
}

const SCALE: &[Scenario] = &[
    sc("pingpong-flat4-v6.12", Mach::Flat(4), "v6.12", Wl::File(PINGPONG), Some("5s")),
    sc("pingpong-flat16-v6.12", Mach::Flat(16), "v6.12", Wl::File(PINGPONG), Some("5s")),
    sc("pingpong-flat64-v6.12", Mach::Flat(64), "v6.12", Wl::File(PINGPONG), Some("5s")),
    sc("pingpong-flat128-v6.12", Mach::Flat(128), "v6.12", Wl::File(PINGPONG), Some("5s")),
    sleepwake!(4, 16, "10240ms"),
    sleepwake!(16, 64, "2560ms"),
    sleepwake!(64, 256, "640ms"),
    sleepwake!(128, 512, "320ms"),
    sleepwake!(256, 1024, "160ms"),
    sleepwake!(512, 2048, "80ms"),
    sleepwake!(1024, 4096, "40ms"),
    sc("hackbench-g64-l100-zen3-8s-1024-v6.6", Mach::Zen3Packages(8), "v6.6", Wl::Builtin("hackbench", "groups=64,loops=100"), None),
];

/// Peak resident set size of this process (VmHWM, what getrusage's ru_maxrss
/// reports, but resettable), in bytes.
fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok()))
        .map_or(0, |kb| kb * 1024)
}

/// Reset VmHWM so each scenario reports its own peak (Linux 4.0+: clear_refs 5).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Preset `base` renamed, with the `[topology]` keys in `set` replaced, those
/// in `drop` removed and, if given, a new `node_distance` matrix.
fn edit_machine(base: &str, name: &str, set: &[(&str, String)], drop: &[&str], distance: Option<String>) -> Result<Machine> {
    let m = load_machine(base)?;
    let mut out = String::new();
    let mut in_matrix = false;
    for line in m.to_toml().lines() {
        if in_matrix {
            in_matrix = line.trim() != "]";
            continue;
        }
        let key = line.split('=').next().unwrap_or("").trim();
        if key == "node_distance" {
            if let Some(d) = &distance {
                out.push_str(&format!("node_distance = {d}\n"));
                in_matrix = !line.trim_end().ends_with(']') || line.trim_end().ends_with("= [");
                continue;
            }
        }
        if drop.contains(&key) {
            continue;
        }
        let value = if key == "name" && !line.starts_with(' ') && out.lines().all(|l| !l.starts_with("name =")) {
            Some(format!("{name:?}"))
        } else {
            set.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone())
        };
        match value {
            Some(v) => out.push_str(&format!("{key} = {v}\n")),
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    schedlab_machine::from_toml_str(&out, name).map_err(|e| anyhow::anyhow!("{e}"))
}

fn machine(m: Mach) -> Result<Machine> {
    match m {
        Mach::Preset(p) => load_machine(p),
        Mach::Flat(n) => edit_machine(
            "laptop-4c8t",
            &format!("flat-{n}"),
            &[("cores_per_llc", n.to_string()), ("threads_per_core", "1".into())],
            &["numbering"],
            None,
        ),
        Mach::Zen3Packages(p) => {
            let rows: Vec<String> =
                (0..p).map(|i| format!("[{}]", (0..p).map(|j| if i == j { "10" } else { "32" }).collect::<Vec<_>>().join(", "))).collect();
            edit_machine(
                "zen3-2s-nps1",
                &format!("zen3-{p}s-nps1"),
                &[("packages", p.to_string())],
                &[],
                Some(format!("[{}]", rows.join(", "))),
            )
        }
    }
}

fn prepare_scenario(s: &Scenario) -> Result<Prepared> {
    if let (Mach::Preset(m), Wl::Builtin(w, set)) = (s.machine, s.workload) {
        return prepare(&RunArgs {
            sysctl: None,
            machine: m.into(),
            kernel: s.kernel.into(),
            features: None,
            patch: None,
            workload: w.into(),
            set: vec![set.into()],
            seed: 1,
            duration: s.duration.map(Into::into),
            json: false,
            schedstat: None,
            switch_log: None,
            machine_model: None,
            trace: None,
            ftrace: None,
            explain: false,
        });
    }
    let machine = machine(s.machine)?;
    let kernel = load_kernel_patched(s.kernel, None, None)?;
    let workload = match s.workload {
        Wl::Builtin(w, set) => {
            let params = Params::parse(set).map_err(|e| anyhow::anyhow!("{e}"))?;
            load_workload(w, &params, &machine, &crate::cores_of(&machine))?
        }
        Wl::File(text) => schedlab_workload::file::from_toml_str(text, s.name).map_err(|e| anyhow::anyhow!("{e}"))?,
    };
    let duration_ns = s.duration.map(crate::parse_duration).transpose()?;
    Ok(Prepared {
        machine,
        kernel,
        workload,
        cfg: SimConfig { seed: 1, duration_ns, schedstat: false, switch_log: false, trace: false, model: Default::default() },
        duration_defaulted: false,
        // A synthetic machine or workload file: the spec names the scenario.
        spec: schedlab_lab::ScenarioSpec {
            machine: s.name.into(),
            kernel: s.kernel.into(),
            duration: s.duration.map(Into::into),
            ..Default::default()
        },
    })
}

pub fn bench(json: bool, filter: Option<&str>, suite: Option<&str>) -> Result<()> {
    let (list, scale) = match suite {
        None | Some("engine") => (ENGINE, false),
        Some("scale") => (SCALE, true),
        Some(other) => bail!("unknown bench suite {other:?}: use `engine` (the default) or `scale`"),
    };
    let mut rows = Vec::new();
    if !json {
        if scale {
            println!(
                "{:<38} {:>12} {:>11} {:>10} {:>9} {:>9} {:>12}",
                "scenario", "ctx-sw/s", "sim s/wall", "ns/switch", "wall s", "peak MB", "ctx switches"
            );
        } else {
            println!("{:<38} {:>14} {:>14} {:>9} {:>10} {:>12}", "scenario", "ctx-sw/s", "events/s", "wall s", "peak MB", "ctx switches");
        }
    }
    for s in list.iter().filter(|s| filter.is_none_or(|f| s.name.contains(f))) {
        let prep = prepare_scenario(s).with_context(|| format!("bench scenario {}", s.name))?;
        reset_peak_rss();
        let t0 = Instant::now();
        let r = schedlab_engine::run(&prep.machine, prep.kernel.clone(), &prep.workload, &prep.cfg);
        let wall = t0.elapsed().as_secs_f64();
        let rss = peak_rss();
        let cs = r.voluntary_switches + r.involuntary_switches;
        let sim_per_wall = r.simulated_ns as f64 / 1e9 / wall;
        let ns_per_switch = wall * 1e9 / cs.max(1) as f64;
        let row = serde_json::json!({
            "name": s.name,
            "context_switches_per_sec": cs as f64 / wall,
            "events_per_sec": r.events as f64 / wall,
            "wall_s": wall,
            "peak_rss_bytes": rss,
            "context_switches": cs,
            "events": r.events,
            "simulated_ns": r.simulated_ns,
            "simulated_s_per_wall_s": sim_per_wall,
            "wall_ns_per_switch": ns_per_switch,
            "cpus": prep.machine.topology.nr_cpus(),
        });
        if !json {
            if scale {
                println!(
                    "{:<38} {:>12.0} {:>11.3} {:>10.0} {:>9.3} {:>9.1} {:>12}",
                    s.name,
                    cs as f64 / wall,
                    sim_per_wall,
                    ns_per_switch,
                    wall,
                    rss as f64 / 1048576.0,
                    cs
                );
            } else {
                println!(
                    "{:<38} {:>14.0} {:>14.0} {:>9.3} {:>10.1} {:>12}",
                    s.name,
                    cs as f64 / wall,
                    r.events as f64 / wall,
                    wall,
                    rss as f64 / 1048576.0,
                    cs
                );
            }
        }
        rows.push(row);
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    }
    Ok(())
}
