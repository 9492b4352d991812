//! End-to-end tests of cpu cgroups: workload files with [[group]], the
//! generic cgroup parameters, seed 002's next-buddy hint and --switch-log.

mod common;
use common::*;

fn json(args: &[&str]) -> serde_json::Value {
    let mut a = args.to_vec();
    a.push("--json");
    serde_json::from_str(&ok(&a)).expect("run --json prints JSON")
}

fn share(v: &serde_json::Value, name: &str) -> f64 {
    let groups = v["groups"].as_array().unwrap();
    let total: f64 = groups.iter().map(|g| g["runtime_ns"].as_f64().unwrap()).sum();
    groups.iter().find(|g| g["name"] == name).unwrap()["runtime_ns"].as_f64().unwrap() / total
}

#[test]
fn nested_group_file_shares_one_cpu() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/groups/nested.toml");
    let v = json(&["run", "--workload", root, "--duration", "2s", "--kernel", "v6.12"]);
    assert!((share(&v, "B") - 0.5).abs() < 0.01, "B {}", share(&v, "B"));
    assert!((share(&v, "A1") - 0.125).abs() < 0.01, "A1 {}", share(&v, "A1"));
    assert!((share(&v, "A2") - 0.375).abs() < 0.01, "A2 {}", share(&v, "A2"));
}

#[test]
fn switch_log_shows_the_seed_002_pattern() {
    let dir = std::env::temp_dir().join(format!("schedlab-groups-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let set = "tasks=4,run_us=2000,sleep_us=1000,cgroups=2,cgroup_process=1,pin=0";
    let mut crossings = Vec::new();
    for patch in ["", "next-buddy-hint"] {
        let log = dir.join(format!("sw-{patch}.txt"));
        // Quiet machine: the log's layout is checked on the pinned CPU alone
        // (with noise the other CPUs' kernel threads are in the log too).
        let mut args =
            vec!["run", "--kernel", "v2.6.38", "--workload", "soaker", "--set", set, "--duration", "500ms", "--machine-model", "NO_NOISE"];
        if !patch.is_empty() {
            args.extend(["--patch", patch]);
        }
        args.extend(["--switch-log", log.to_str().unwrap()]);
        let summary = ok(&args);
        assert!(summary.contains("cross-group switches"), "{summary}");
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<Vec<&str>> = text.lines().filter(|l| !l.starts_with('#')).map(|l| l.split('\t').collect()).collect();
        assert!(lines.len() > 200, "one line per switch: {}", lines.len());
        assert!(lines.iter().all(|f| f.len() == 6 && f[1] == "0"), "six fields, all on CPU 0 (pinned)");
        // Each switch's prev is the previous switch's next.
        for w in lines.windows(2) {
            assert_eq!(w[0][4], w[1][2], "chained switches");
        }
        let tasks: Vec<&Vec<&str>> = lines.iter().filter(|f| f[2] != "<idle>-0" && f[4] != "<idle>-0").collect();
        let cross = tasks.iter().filter(|f| f[3] != f[5]).count() as f64 / tasks.len() as f64;
        crossings.push(cross);
    }
    assert!(crossings[0] > 0.9, "v2.6.38 changes group on nearly every switch: {:.2}", crossings[0]);
    assert!(crossings[1] < 0.4, "with the hint the CPU stays in a group: {:.2}", crossings[1]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_group_input_is_explained() {
    let err = |args: &[&str]| {
        let out = schedlab(args);
        assert!(!out.status.success(), "{args:?} should fail");
        text(&out.stderr)
    };
    let e = err(&["run", "--workload", "soaker", "--set", "tasks=4,cgroups=2,cgroup_shares=1024:2048:4096"]);
    assert!(e.contains("cgroup_shares") && e.contains("3 values"), "{e}");
    let e = err(&["run", "--workload", "soaker", "--set", "cgroups=2"]);
    assert!(e.contains("1 tasks") && e.contains("at most one cgroup per task"), "{e}");
    let e = err(&["run", "--workload", "soaker", "--set", "cgroup_shares=2048"]);
    assert!(e.contains("need cgroups"), "{e}");
    let e = err(&["run", "--workload", "soaker", "--set", "pin=0-99"]);
    assert!(e.contains("pin") && e.contains("0-11"), "{e}");
    let e = err(&["run", "--kernel", "v3.10", "--patch", "next-buddy-hint"]);
    assert!(e.contains("already has it"), "{e}");
    let e = err(&["run", "--kernel", "v2.6.38", "--patch", "no-next-buddy-hint"]);
    assert!(e.contains("does not have"), "{e}");
    let dir = std::env::temp_dir().join(format!("schedlab-groups-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/groups/nested.toml")).unwrap();
    let f = dir.join("fwd.toml");
    std::fs::write(&f, src.replace("name = \"A1\"\nparent = 1", "name = \"A1\"\nparent = 3")).unwrap();
    let e = err(&["run", "--workload", f.to_str().unwrap()]);
    assert!(e.contains("parent") && e.contains("earlier"), "{e}");
    std::fs::write(&f, src.replace("weight = 100", "weight = 100\nshares = 5")).unwrap();
    let e = err(&["run", "--workload", f.to_str().unwrap()]);
    assert!(e.contains("not both"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}
