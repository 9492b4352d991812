//! Helpers shared by the CLI end-to-end tests: run the built `schedlab` binary.
#![allow(dead_code)]

use std::process::{Command, Output};

pub fn schedlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schedlab")).args(args).env_remove("RUST_BACKTRACE").output().expect("cannot start the schedlab binary")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs a command that must succeed; returns its stdout.
pub fn ok(args: &[&str]) -> String {
    let out = schedlab(args);
    assert!(out.status.success(), "schedlab {args:?} failed with {:?}\nstderr:\n{}", out.status, text(&out.stderr));
    text(&out.stdout)
}
