//! End-to-end tests of `schedlab reproduce` on a tiny experiment file in a temp dir.

use std::path::PathBuf;
mod common;
use common::{ok, schedlab, text};

const TINY: &str = r#"name = "tiny"
description = "a tiny study for the tests"
source = "none"

[[comparison]]
workload = "hackbench"
set = "groups=1,loops=20,fds=2,4"
kernel = "v3.10"
vs = "v6.6"
runs = 2
published = "nothing published"
"#;

const COMPARE: &[&str] =
    &["compare", "--workload", "hackbench", "--set", "groups=1,loops=20,fds=2,4", "--kernel", "v3.10", "--vs", "v6.6", "--runs", "2"];

fn tmpdir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("schedlab-reproduce-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn list_shows_studies() {
    let dir = tmpdir("list");
    std::fs::write(dir.join("tiny.toml"), TINY).unwrap();
    let out = ok(&["reproduce", "--list", "--dir", dir.to_str().unwrap()]);
    assert!(out.contains("tiny") && out.contains("a tiny study for the tests"), "{out}");
    // The shipped studies parse too.
    let shipped = concat!(env!("CARGO_MANIFEST_DIR"), "/../../experiments");
    assert!(ok(&["reproduce", "--list", "--dir", shipped]).contains("wakee-flips"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_key_is_rejected_with_file_and_line() {
    let dir = tmpdir("bad");
    let f = dir.join("bad.toml");
    std::fs::write(&f, TINY.replace("runs = 2", "runz = 2")).unwrap();
    let out = schedlab(&["reproduce", f.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("{}:10:", f.display())) && err.contains("runz"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn output_equals_compare_and_is_independent_of_jobs() {
    let dir = tmpdir("same");
    let f = dir.join("tiny.toml");
    std::fs::write(&f, TINY).unwrap();
    let cmp = ok(COMPARE);
    let mut outs = Vec::new();
    for jobs in ["1", "2"] {
        let (j, c) = (dir.join(format!("r{jobs}.json")), dir.join(format!("r{jobs}.csv")));
        let out = ok(&["reproduce", f.to_str().unwrap(), "--jobs", jobs, "--json", j.to_str().unwrap(), "--csv", c.to_str().unwrap()]);
        assert!(out.contains(&cmp), "reproduce output does not contain the compare output:\n{out}\n---\n{cmp}");
        assert!(out.contains("published:\nnothing published"), "{out}");
        outs.push((out, std::fs::read(&j).unwrap(), std::fs::read(&c).unwrap()));
    }
    assert_eq!(outs[0], outs[1], "--jobs 1 and --jobs 2 differ");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn machine_file_is_found_relative_to_the_experiment_from_any_directory() {
    let dir = tmpdir("files");
    // From elsewhere/deeper, ../machines/c1.toml is no file: only the experiment's directory finds it.
    for d in ["exp", "machines", "elsewhere/deeper"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    let repo = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    std::fs::copy(format!("{repo}/validation/machines/x86-12-c1.toml"), dir.join("machines/c1.toml")).unwrap();
    let f = dir.join("exp/tiny.toml");
    let run = |machine: &str| {
        std::fs::write(&f, TINY.replace("[[comparison]]\n", &format!("[[comparison]]\nmachine = \"{machine}\"\n"))).unwrap();
        std::process::Command::new(env!("CARGO_BIN_EXE_schedlab"))
            .args(["reproduce", f.to_str().unwrap(), "--jobs", "1"])
            .current_dir(dir.join("elsewhere/deeper"))
            .output()
            .unwrap()
    };
    let out = run("../machines/c1.toml");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("hackbench on c1 (12 CPUs)"), "{}", text(&out.stdout));
    // A missing file names itself, where it was looked for and the experiment file and line.
    let out = run("../machines/c2.toml");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let looked = dir.join("exp/../machines/c2.toml");
    assert!(
        err.contains(&format!("{}:5: machine file \"../machines/c2.toml\" not found: no file {}", f.display(), looked.display())),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
