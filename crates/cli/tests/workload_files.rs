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
