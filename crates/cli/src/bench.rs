//! `schedlab bench`: fixed scenarios measuring simulator speed (never run in tests).

use crate::{prepare, RunArgs};
use anyhow::Result;
use std::time::Instant;

struct Scenario {
    name: &'static str,
    machine: &'static str,
    kernel: &'static str,
    workload: &'static str,
    set: &'static str,
    duration: Option<&'static str>,
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "hackbench-g16-l1000-zen3-nps1-v6.6",
        machine: "zen3-2s-nps1",
        kernel: "v6.6",
        workload: "hackbench",
        set: "groups=16,loops=1000",
        duration: None,
    },
    Scenario {
        name: "hackbench-pipe-g4-l1000-x86-12-v3.10",
        machine: "x86-12",
        kernel: "v3.10",
        workload: "hackbench",
        set: "groups=4,loops=1000,pipe=1",
        duration: None,
    },
    Scenario {
        name: "pipe-l200000-laptop-v6.12",
        machine: "laptop-4c8t",
        kernel: "v6.12",
        workload: "pipe",
        set: "loops=200000",
        duration: None,
    },
    Scenario {
        name: "context_switch1-p168-spr112-v6.12",
        machine: "spr-112",
        kernel: "v6.12",
        workload: "context_switch1",
        set: "pairs=168",
        duration: Some("200ms"),
    },
];

/// Peak resident set size of this process (VmHWM), in bytes.
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

pub fn bench(json: bool, filter: Option<&str>) -> Result<()> {
    let mut rows = Vec::new();
    if !json {
        println!("{:<38} {:>14} {:>14} {:>9} {:>10} {:>12}", "scenario", "ctx-sw/s", "events/s", "wall s", "peak MB", "ctx switches");
    }
    for s in SCENARIOS.iter().filter(|s| filter.is_none_or(|f| s.name.contains(f))) {
        let args = RunArgs {
            sysctl: None,
            machine: s.machine.into(),
            kernel: s.kernel.into(),
            features: None,
            patch: None,
            workload: s.workload.into(),
            set: vec![s.set.into()],
            seed: 1,
            duration: s.duration.map(Into::into),
            json: false,
            schedstat: None,
            switch_log: None,
            machine_model: None,
            trace: None,
            ftrace: None,
        };
        let prep = prepare(&args)?;
        reset_peak_rss();
        let t0 = Instant::now();
        let r = schedlab_engine::run(&prep.machine, prep.kernel.clone(), &prep.workload, &prep.cfg);
        let wall = t0.elapsed().as_secs_f64();
        let rss = peak_rss();
        let cs = r.voluntary_switches + r.involuntary_switches;
        let row = serde_json::json!({
            "name": s.name,
            "context_switches_per_sec": cs as f64 / wall,
            "events_per_sec": r.events as f64 / wall,
            "wall_s": wall,
            "peak_rss_bytes": rss,
            "context_switches": cs,
            "events": r.events,
            "simulated_ns": r.simulated_ns,
        });
        if !json {
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
        rows.push(row);
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    }
    Ok(())
}
