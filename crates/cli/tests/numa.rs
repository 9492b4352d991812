//! End-to-end tests of NUMA balancing and process memory (fair/numa.rs,
//! engine numa.rs): the per-cgroup tables, the JSON object, the sysctls and
//! the refusals. Each run is short (well under 2 s in release).

mod common;
use common::{schedlab, text};

fn run(args: &[&str]) -> (bool, String, String) {
    let out = schedlab(args);
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// `run` of two sysbench instances on numa-2n-96 for 300 ms under `kernel`.
fn sysbench_numa(kernel: &str) -> Vec<&str> {
    vec![
        "run",
        "--machine",
        "numa-2n-96",
        "--kernel",
        kernel,
        "--workload",
        "sysbench",
        "--set",
        "instances=2,threads=2,db_mib=64",
        "--duration",
        "300ms",
    ]
}

// sysbench instances on numa-2n-96 under v5.2: per-cgroup CPU and memory per node, NUMA counters.
#[test]
fn sysbench_instances_print_numa_tables() {
    let base = sysbench_numa("v5.2");
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
        (&["run", "--kernel", "v3.10", "--sysctl", "numa_balancing=1", "--workload", "pipe"], "v3.10's NUMA balancing is not modelled"),
        (&["run", "--kernel", "v5.2", "--sysctl", "numa_balancing=3", "--workload", "pipe"], "0 (off) or 1"),
        (&["run", "--kernel", "v5.2", "--sysctl", "scan=3", "--workload", "pipe"], "unknown --sysctl"),
        (&["run", "--kernel", "v6.12", "--patch", "numa-cling", "--workload", "pipe"], "applies to v5.2"),
    ];
    // Process memory on a node the machine does not have (workload files can
    // declare it since [[memory]]; exports of memory-declaring built-ins work).
    let f = std::env::temp_dir().join(format!("schedlab-numa-refusal-{}.toml", std::process::id()));
    std::fs::write(
        &f,
        "format = 1\nname = \"m\"\n[metric]\nkind = \"elapsed\"\nname = \"t\"\nstart = 0\nend = 1\n[[program]]\nops = [\"mark id=0\", \"run ns=1ms\", \"mark id=1\"]\n[[task]]\nname = \"a\"\nprogram = 0\nmm = 0\n[[memory]]\nmm = 0\nshared_mib = 64\nprivate_pct = 0\nstall_pct = 30\ntouch_mib_per_s = 100\ninitial_node = 9\n",
    )
    .unwrap();
    let memory_run = ["run", "--machine", "numa-2n-96", "--kernel", "v5.2", "--workload", f.to_str().unwrap()];
    let cases: Vec<(&[&str], &str)> =
        cases.iter().copied().chain([(&memory_run[..], "starts on node 9, but numa-2n-96 has 2 node(s)")]).collect();
    for (args, needle) in cases {
        let out = schedlab(args);
        let err = text(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

// compare between v5.2 and v5.2 + the cling series: the NUMA tables per point,
// side and cgroup in the text, every run's tables in --json, and the HTML report.
#[test]
fn compare_prints_numa_tables_per_side() {
    let dir = std::env::temp_dir().join(format!("schedlab-numa-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (json, html) = (dir.join("c.json"), dir.join("c.html"));
    let (ok, out, err) = run(&[
        "compare",
        "--machine",
        "numa-2n-96",
        "--kernel",
        "v5.2",
        "--patch-b",
        "numa-cling",
        "--workload",
        "sysbench",
        "--set",
        "instances=2,threads=2,db_mib=64",
        "--runs",
        "2",
        "--duration",
        "100ms",
        "--json",
        json.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("NUMA (means over runs)"), "{out}");
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("default") && l.contains(" inst")).collect();
    assert_eq!(rows.len(), 4, "two cgroups x two sides:\n{out}");
    assert!(rows[0].contains(" A ") && rows[3].contains(" B "), "{out}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let runs = v["tables"][0]["recs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    for r in runs {
        let groups = r["numa"].as_array().unwrap_or_else(|| panic!("no numa in {r}"));
        assert_eq!(groups.len(), 2);
        let mem: f64 = groups[0]["mem_pct"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).sum();
        assert!((mem - 100.0).abs() < 0.5, "memory shares add up to 100%: {mem}");
    }
    let h = std::fs::read_to_string(&html).unwrap();
    assert!(h.contains("<h4>NUMA placement</h4>") && h.contains("inst1"), "NUMA table in the HTML report");
    // Without memory there is no NUMA table.
    let (ok, out, _) = run(&["compare", "--machine", "numa-2n-96", "--workload", "pipe", "--set", "loops=200", "--runs", "1"]);
    assert!(ok && !out.contains("NUMA (means over runs)"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

// `schedlab kernel show` names each profile's NUMA balancing placement form
// (profile.numa), and v6.12 runs with `--sysctl numa_balancing=1` (the v5.7+ form).
#[test]
fn v6_12_numa_balancing_form_shown_and_runs() {
    for (k, needle) in [
        ("v6.12", "NUMA balancing placement    V5_7: v5.7+"),
        ("v5.2", "NUMA balancing placement    V4_19: v4.19-v5.6"),
        ("v3.10", "NUMA balancing placement    None: not modelled"),
    ] {
        let (ok, out, err) = run(&["kernel", "show", k]);
        assert!(ok, "{err}");
        assert!(out.contains(needle), "{k}:\n{out}");
    }
    let (_, out, _) = run(&["kernel", "show", "v6.12"]);
    assert!(out.contains("<= imb_numa_nr") && out.contains("F-776"), "{out}");
    let mut args = sysbench_numa("v6.12");
    args.extend(["--sysctl", "numa_balancing=1,numa_balancing_scan_delay_ms=100", "--json"]);
    let (ok, out, err) = run(&args);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["numa"]["balancing"], true);
    assert!(v["numa"]["groups"].as_array().unwrap().iter().all(|g| g["numa_hint_faults"].as_u64().unwrap() > 0), "{out}");
}
