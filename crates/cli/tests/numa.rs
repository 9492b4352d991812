//! End-to-end tests of NUMA balancing and process memory (fair/numa.rs,
//! engine numa.rs): the per-cgroup tables, the JSON object, the sysctls and
//! the refusals. Each run is short (well under 2 s in release).

mod common;
use common::{schedlab, text};

fn run(args: &[&str]) -> (bool, String, String) {
    let out = schedlab(args);
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

// sysbench instances on numa-2n-96 under v5.2: per-cgroup CPU and memory per node, NUMA counters.
#[test]
fn sysbench_instances_print_numa_tables() {
    let base = [
        "run",
        "--machine",
        "numa-2n-96",
        "--kernel",
        "v5.2",
        "--workload",
        "sysbench",
        "--set",
        "instances=2,threads=2,db_mib=64",
        "--duration",
        "300ms",
    ];
    let (ok, out, err) = run(&base);
    assert!(ok, "{err}");
    for needle in ["NUMA balancing         on", "CPU usage per node", "memory ratio per node", "inst0", "inst1", "hint_faults"] {
        assert!(out.contains(needle), "missing {needle:?}:\n{out}");
    }
    let mut j = base.to_vec();
    j.push("--json");
    j.extend(["--patch", "numa-cling", "--sysctl", "numa_balancing_scan_delay_ms=100"]);
    let (ok, out, err) = run(&j);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let groups = v["numa"]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "{out}");
    assert!(groups.iter().all(|g| g["numa_group"].is_number()), "the cgroups have NUMA groups under the patch");
    assert!(groups.iter().all(|g| g["numa_hint_faults"].as_u64().unwrap() > 0), "scan delay 100 ms: faults by 300 ms");
    // numa_balancing=0: no fault at all.
    let mut off = base.to_vec();
    off.extend(["--json", "--sysctl", "numa_balancing=0"]);
    let (ok, out, err) = run(&off);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["numa"]["balancing"], false);
    assert!(v["numa"]["groups"].as_array().unwrap().iter().all(|g| g["numa_hint_faults"] == 0));
}

#[test]
fn numa_refusals() {
    let cases: &[(&[&str], &str)] = &[
        (&["run", "--kernel", "v6.12", "--sysctl", "numa_balancing=1", "--workload", "pipe"], "v5.2 form only"),
        (&["run", "--kernel", "v5.2", "--sysctl", "numa_balancing=3", "--workload", "pipe"], "0 (off) or 1"),
        (&["run", "--kernel", "v5.2", "--sysctl", "scan=3", "--workload", "pipe"], "unknown --sysctl"),
        (&["run", "--kernel", "v6.12", "--patch", "numa-cling", "--workload", "pipe"], "applies to v5.2"),
        (&["workload", "export", "sysbench", "--set", "instances=2"], "cannot express"),
    ];
    for (args, needle) in cases {
        let out = schedlab(args);
        let err = text(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}
