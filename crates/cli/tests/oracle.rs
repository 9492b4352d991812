//! `schedlab oracle` end to end (slow: boots Linux 6.12 under qemu twice,
//! about 1-2 minutes in all). Needs what scripts/oracle-setup installs (.ci/run
//! runs it); set SCHEDLAB_SKIP_ORACLE=1 to skip on a machine without it.
//!
//! The real kernel's side must parse into sensible numbers: every domain level
//! of the machine present, with remote wakeups at every level for hackbench,
//! wakeup counts that add up (ttwu_local + remote at each level = ttwu_count,
//! as kernel/sched/stats.h ttwu_stat() counts them), and domain spans equal to
//! the ones the model builds for the machine.

use serde_json::Value;
mod common;
use common::{schedlab, text};

const MACHINE: &str = "../../examples/machines/numa-8cpu-2s-smt2.toml";

fn oracle_json(workload: &str, set: &str) -> Value {
    let args = ["oracle", "--machine", MACHINE, "--workload", workload, "--set", set, "--reps", "1", "--timeout", "400", "--json"];
    let out = schedlab(&args);
    // Straight to the test's stderr, past libtest's capture (which only takes
    // the print macros), so that CI's log shows the kernel being downloaded
    // (on a fresh cache) and booted.
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("[oracle test] schedlab {}:\n{}", args.join(" "), text(&out.stderr)).as_bytes(),
    );
    assert!(out.status.success(), "schedlab {args:?} failed with {:?}\nstderr:\n{}", out.status, text(&out.stderr));
    let out = text(&out.stdout);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("oracle --json printed no JSON ({e}):\n{out}"))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Checks shared by every workload; returns the real side.
fn sensible(j: &Value, min_wakeups: u64) -> Value {
    let real = j["real"].clone();
    assert_eq!(real["spans_match"], Value::Bool(true), "guest domains differ from the model's: {}", real["span_mismatches"]);
    assert_eq!(real["topology_mismatches"].as_array().map(|a| a.len()), Some(0), "guest topology differs: {}", real["topology_mismatches"]);
    assert!(matches!(u(&real["schedstat_version"]), 15..=17));
    let release = real["kernel_release"].as_str().unwrap();
    assert!(release.starts_with("6.12"), "{release}");
    // The image booted is the release the guest reports (Debian names both
    // after the same version, e.g. vmlinuz-6.12.117+deb12-amd64).
    assert_eq!(real["kernel_image"].as_str().unwrap(), format!("vmlinuz-{release}"));
    // SMT siblings, the socket's LLC, the NUMA level over both nodes.
    let levels: Vec<&str> = real["levels"].as_array().unwrap().iter().map(|l| l["level"].as_str().unwrap()).collect();
    assert_eq!(levels, ["SMT", "MC", "NUMA"]);
    let spans: Vec<&str> = real["level_spans"].as_array().unwrap().iter().map(|l| l["span"].as_str().unwrap()).collect();
    assert_eq!(spans, ["0-1", "0-3", "0-7"]);
    let count = u(&real["ttwu_count"]);
    assert!(count >= min_wakeups, "only {count} wakeups in the guest");
    let remote: u64 = real["levels"].as_array().unwrap().iter().map(|l| u(&l["ttwu_wake_remote"])).sum();
    let sum = u(&real["ttwu_local"]) + remote;
    assert!(sum.abs_diff(count) <= 2 + count / 200, "ttwu_local + remote = {sum}, ttwu_count = {count}");
    // The model side ran the same machine and workload.
    let model_levels: Vec<&str> = j["model"]["levels"].as_array().unwrap().iter().map(|l| l["level"].as_str().unwrap()).collect();
    assert_eq!(model_levels, levels);
    assert!(u(&j["model"]["ttwu_count"]) > 0);
    real
}

#[test]
fn oracle_hackbench_and_pipe_on_an_8_cpu_numa_guest() {
    if std::env::var_os("SCHEDLAB_SKIP_ORACLE").is_some_and(|v| v == "1") {
        eprintln!("SCHEDLAB_SKIP_ORACLE=1: oracle test skipped");
        return;
    }
    // Bad input is refused before anything boots.
    let out = schedlab(&["oracle", "--machine", "zen3-2s-nps1", "--workload", "hackbench"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("at most 32"), "{}", text(&out.stderr));
    let out = schedlab(&["oracle", "--machine", MACHINE, "--workload", "schbench"]);
    assert!(text(&out.stderr).contains("no guest program"), "{}", text(&out.stderr));

    // hackbench: 2 groups of 20 + 20 tasks spread over both sockets.
    let h = oracle_json("hackbench", "groups=2,loops=50");
    let real = sensible(&h, 1000);
    for l in real["levels"].as_array().unwrap() {
        assert!(u(&l["ttwu_wake_remote"]) > 0, "no remote wakeups at level {}", l["level"]);
        assert!(u(&l["lb_count"]) > 0, "no load balancing at level {}", l["level"]);
    }
    assert!(real["migrations"].as_u64().is_some_and(|m| m > 0), "hackbench migrated nothing: {}", real["migrations"]);
    assert!(real["guest_outputs"][0].as_str().unwrap().contains("Time:"), "{}", real["guest_outputs"]);

    // pipe ping-pong, 2000 round trips: up to two wakeups each (fewer when a
    // reply arrives before its reader blocks; 3923 seen).
    let p = oracle_json("pipe", "loops=2000");
    let real = sensible(&p, 1000);
    assert_eq!(real["guest_outputs"][0].as_str().unwrap().trim(), "round_trips 2000");
}
