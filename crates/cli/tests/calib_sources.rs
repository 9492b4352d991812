//! The measuring programs under scripts/calib-src and the bash scripts that
//! drive them are part of the calibration chain (docs/CALIBRATION.md cites
//! each by name): every C program must still compile, warning-free, with the
//! system C compiler (skipped, with a note, on a machine without `cc`), and
//! every bash script must parse (`bash -n`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The files directly under `rel` (from the repository root) that `keep`
/// accepts, sorted; at least 20 of them (the docs cite that many).
fn files_in(rel: &str, what: &str, keep: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel);
    let mut v: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| keep(p))
        .collect();
    v.sort();
    assert!(v.len() >= 20, "{rel}: {} {what}, expected the 20+ the docs cite", v.len());
    v
}

/// Run `prog args FILE` on each file; the failures with their stderr.
fn failures(files: &[PathBuf], prog: &str, args: &[&str]) -> Vec<String> {
    let mut failed = Vec::new();
    for f in files {
        let out = Command::new(prog).args(args).arg(f).output().unwrap_or_else(|e| panic!("{prog}: {e}"));
        if !out.status.success() {
            failed.push(format!("{}:\n{}", f.display(), String::from_utf8_lossy(&out.stderr)));
        }
    }
    failed
}

#[test]
fn every_calibration_program_compiles_without_warnings() {
    let sources = files_in("scripts/calib-src", "C programs", |p| p.extension().is_some_and(|x| x == "c"));
    if Command::new("cc").arg("--version").output().is_err() {
        eprintln!("no `cc` on PATH: the {} calibration programs were not compiled", sources.len());
        return;
    }
    // -fopenmp for streamomp.c's pragmas; syntax only, so no libraries are needed.
    let failed = failures(&sources, "cc", &["-fsyntax-only", "-Wall", "-Werror", "-fopenmp"]);
    assert!(failed.is_empty(), "calibration programs that do not compile cleanly:\n{}", failed.join("\n"));
}

#[test]
fn every_bash_script_parses() {
    let is_bash = |p: &Path| {
        p.is_file() && std::fs::read_to_string(p).is_ok_and(|t| t.lines().next().is_some_and(|l| l.starts_with("#!") && l.contains("bash")))
    };
    let failed = failures(&files_in("scripts", "bash scripts", is_bash), "bash", &["-n"]);
    assert!(failed.is_empty(), "bash scripts that do not parse:\n{}", failed.join("\n"));
}
