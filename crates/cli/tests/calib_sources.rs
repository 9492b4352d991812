//! The measuring programs under scripts/calib-src and the bash scripts that
//! drive them are part of the calibration chain (docs/CALIBRATION.md cites
//! each by name): every C program must still compile, warning-free, with the
//! system C compiler (skipped, with a note, on a machine without `cc`), and
//! every bash script must parse (`bash -n`).

use std::path::Path;
use std::process::Command;

#[test]
fn every_calibration_program_compiles_without_warnings() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/calib-src");
    let mut sources: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    sources.sort();
    assert!(sources.len() >= 20, "scripts/calib-src: {} C programs, expected the 20+ the docs cite", sources.len());
    if Command::new("cc").arg("--version").output().is_err() {
        eprintln!("no `cc` on PATH: the {} calibration programs were not compiled", sources.len());
        return;
    }
    let mut failed = Vec::new();
    for src in &sources {
        // -fopenmp for streamomp.c's pragmas; syntax only, so no libraries are needed.
        let out = Command::new("cc").args(["-fsyntax-only", "-Wall", "-Werror", "-fopenmp"]).arg(src).output().expect("cc runs");
        if !out.status.success() {
            failed.push(format!("{}:\n{}", src.display(), String::from_utf8_lossy(&out.stderr)));
        }
    }
    assert!(failed.is_empty(), "calibration programs that do not compile cleanly:\n{}", failed.join("\n"));
}

#[test]
fn every_bash_script_parses() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts");
    let mut scripts: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.is_file()
                && std::fs::read_to_string(p).is_ok_and(|t| t.lines().next().is_some_and(|l| l.starts_with("#!") && l.contains("bash")))
        })
        .collect();
    scripts.sort();
    assert!(scripts.len() >= 20, "scripts/: {} bash scripts, expected the 20+ the docs cite", scripts.len());
    let mut failed = Vec::new();
    for s in &scripts {
        let out = Command::new("bash").arg("-n").arg(s).output().expect("bash runs");
        if !out.status.success() {
            failed.push(format!("{}:\n{}", s.display(), String::from_utf8_lossy(&out.stderr)));
        }
    }
    assert!(failed.is_empty(), "bash scripts that do not parse:\n{}", failed.join("\n"));
}
