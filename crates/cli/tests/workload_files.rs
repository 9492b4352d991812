//! `schedlab workload export` and `schedlab run --workload FILE.toml|FILE.json`.

mod common;
use common::schedlab;

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("schedlab-wf-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

#[test]
fn exported_file_runs_like_the_builtin() {
    let f = tmp("hb.toml");
    let out = schedlab(&["workload", "export", "hackbench", "--set", "groups=2,loops=20", "-o", f.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let a = schedlab(&["run", "--workload", "hackbench", "--set", "groups=2,loops=20", "--json"]);
    let b = schedlab(&["run", "--workload", f.to_str().unwrap(), "--json"]);
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let ja: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    let jb: serde_json::Value = serde_json::from_slice(&b.stdout).unwrap();
    assert_eq!(ja["metric"], jb["metric"]);
    assert_eq!(ja["events"], jb["events"]);
    assert_eq!(ja["simulated_ns"], jb["simulated_ns"]);
}

// Exports keep what the built-in declares beyond programs and tasks: process
// memory (NUMA) and open-loop arrivals; the files run like the built-ins.
#[test]
fn exported_memory_and_arrivals_run_like_the_builtin() {
    for (name, set, machine, kernel) in [
        ("sysbench", "instances=2,threads=2,db_mib=64", "numa-2n-96", "v5.2"),
        ("memcached", "rate=20000,connections=4", "x86-12", "v6.12"),
    ] {
        let f = tmp(&format!("{name}-exported.toml"));
        let out = schedlab(&["workload", "export", name, "--set", set, "--machine", machine, "-o", f.to_str().unwrap()]);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let common = ["--machine", machine, "--kernel", kernel, "--duration", "50ms", "--json"];
        let mut a = vec!["run", "--workload", name, "--set", set];
        a.extend(common);
        let mut b = vec!["run", "--workload", f.to_str().unwrap()];
        b.extend(common);
        let (a, b) = (schedlab(&a), schedlab(&b));
        assert!(b.status.success(), "{name}: {}", String::from_utf8_lossy(&b.stderr));
        let ja: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
        let jb: serde_json::Value = serde_json::from_slice(&b.stdout).unwrap();
        assert_eq!(ja["metric"], jb["metric"], "{name}");
        assert_eq!(ja["events"], jb["events"], "{name}");
        // On a machine without that node or CPU: an error naming it and the fix.
        let text = std::fs::read_to_string(&f).unwrap();
        let bad = tmp(&format!("{name}-bad.toml"));
        let (edited, want) = if name == "sysbench" {
            (text.replacen("touch_mib_per_s", "initial_node = 5\ntouch_mib_per_s", 1), "starts on node 5, but numa-2n-96 has 2 node(s)")
        } else {
            (text.replacen("conns = [[0, 0, ", "conns = [[0, 0, 40", 1), "on CPU 40")
        };
        assert_ne!(edited, text, "{name}: the edit applies");
        std::fs::write(&bad, edited).unwrap();
        let out = schedlab(&["run", "--workload", bad.to_str().unwrap(), "--machine", machine, "--kernel", kernel]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(want), "{name}: {err}");
    }
}

#[test]
fn malformed_files_name_file_line_and_field() {
    let f = tmp("bad.toml");
    std::fs::write(&f, "format = 1\nname = \"x\"\n[metric]\nkind = \"elapsed\"\nname = \"t\"\nstart = 0\nend = 1\n[[task]]\nname = \"a\"\nprogram = 0\nmm = 0\nwings = 2\n").unwrap();
    let out = schedlab(&["run", "--workload", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml:12") && err.contains("wings"), "{err}");
    let out = schedlab(&["run", "--workload", f.to_str().unwrap(), "--set", "groups=2"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn rtapp_json_runs() {
    let f = tmp("rt.json");
    std::fs::write(&f, r#"{"tasks": {"a": {"loop": -1, "run": 100, "sleep": 100}}}"#).unwrap();
    let out = schedlab(&["run", "--workload", f.to_str().unwrap(), "--duration", "20ms"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("loops"));
}
