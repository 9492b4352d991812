//! Every command output shown in README.md is what the command prints today.
//!
//! An output block in the README is a fenced block right after a marker line
//!
//! ```text
//! <!-- output: CMD -->            the block is "$ CMD" then CMD's stdout
//! <!-- output nocmd: CMD -->      the block is CMD's stdout alone
//! <!-- output shape: CMD -->      as `output`, compared with every digit run
//!                                 masked (wall-clock figures, real kernels)
//! <!-- output oracle shape: CMD --> boots qemu: skipped with SCHEDLAB_SKIP_ORACLE=1
//! ```
//!
//! CMD runs under bash in the repository root with this build's `schedlab`
//! first on PATH. `scripts/readme-outputs` (SCHEDLAB_README_WRITE=1) rewrites
//! the blocks from the real commands instead of checking them.

use std::path::{Path, PathBuf};
use std::process::Command;

struct Block {
    flags: Vec<String>,
    cmd: String,
    /// Line index of the opening fence and of the closing fence.
    open: usize,
    close: usize,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn blocks(lines: &[&str]) -> Vec<Block> {
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(inner) = l.trim().strip_prefix("<!-- output").and_then(|r| r.strip_suffix("-->")) else { continue };
        let (flags, cmd) = inner.split_once(':').unwrap_or_else(|| panic!("README.md:{}: output marker without `: CMD`", i + 1));
        let open = i + 1;
        assert!(
            lines.get(open).is_some_and(|f| f.starts_with("```")),
            "README.md:{}: an output marker must be followed by a ``` fence",
            i + 1
        );
        let close = (open + 1..lines.len())
            .find(|&j| lines[j].starts_with("```"))
            .unwrap_or_else(|| panic!("README.md:{}: unclosed fence", open + 1));
        out.push(Block { flags: flags.split_whitespace().map(String::from).collect(), cmd: cmd.trim().to_string(), open, close });
    }
    out
}

fn run(cmd: &str) -> String {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_schedlab")).parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new("bash")
        .args(["-o", "pipefail", "-c", cmd])
        .current_dir(root())
        .env("PATH", path)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("cannot run bash");
    assert!(out.status.success(), "README command `{cmd}` failed ({:?}):\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("README command printed non-UTF-8")
}

fn mask(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    let mut in_num = false;
    for c in s.chars() {
        if c.is_ascii_digit() || (in_num && (c == '.' || c == ',')) {
            if !in_num {
                o.push('#');
            }
            in_num = true;
        } else {
            in_num = false;
            o.push(c);
        }
    }
    // A masked line keeps its words; spaces (column padding that follows
    // number widths, also inside `[ 8.0- 9.7]`) do not count.
    o.split('\n').map(|l| l.split_whitespace().collect::<String>()).collect::<Vec<_>>().join("\n")
}

#[test]
fn readme_outputs_are_what_the_commands_print() {
    let path = root().join("README.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let blocks = blocks(&lines);
    assert!(blocks.len() >= 8, "README.md has only {} output blocks", blocks.len());
    let write = std::env::var_os("SCHEDLAB_README_WRITE").is_some_and(|v| v == "1");
    let skip_oracle = std::env::var_os("SCHEDLAB_SKIP_ORACLE").is_some_and(|v| v == "1");
    let mut new_lines: Vec<String> = Vec::new();
    let mut next = 0;
    let mut stale = Vec::new();
    for b in &blocks {
        new_lines.extend(lines[next..=b.open].iter().map(|s| s.to_string()));
        next = b.close;
        let current = lines[b.open + 1..b.close].join("\n");
        if b.flags.iter().any(|f| f == "oracle") && skip_oracle {
            eprintln!("SCHEDLAB_SKIP_ORACLE=1: README block `{}` not checked", b.cmd);
            new_lines.extend(lines[b.open + 1..b.close].iter().map(|s| s.to_string()));
            continue;
        }
        let mut fresh = String::new();
        if !b.flags.iter().any(|f| f == "nocmd") {
            fresh.push_str(&format!("$ {}\n", b.cmd));
        }
        fresh.push_str(&run(&b.cmd));
        let fresh = fresh.trim_end_matches('\n').to_string();
        let same = if b.flags.iter().any(|f| f == "shape") { mask(&fresh) == mask(&current) } else { fresh == current };
        if !same {
            stale.push(format!("README.md:{}: `{}`\n--- README\n{current}\n--- today\n{fresh}", b.open, b.cmd));
        }
        if write && !same {
            new_lines.extend(fresh.lines().map(String::from));
        } else {
            new_lines.extend(lines[b.open + 1..b.close].iter().map(|s| s.to_string()));
        }
    }
    new_lines.extend(lines[next..].iter().map(|s| s.to_string()));
    if write {
        let mut out = new_lines.join("\n");
        out.push('\n');
        std::fs::write(&path, out).unwrap();
        eprintln!("README.md: {} block(s) rewritten", stale.len());
        return;
    }
    assert!(stale.is_empty(), "README outputs differ from the commands (regenerate with scripts/readme-outputs):\n{}", stale.join("\n\n"));
}

#[test]
fn mask_ignores_numbers_and_padding() {
    assert_eq!(mask("ctx  1,234.5 us\nx 7"), mask("ctx 99 us\nx 1"));
    assert_eq!(mask("a [ 8.0- 9.7]"), mask("a [10.7-12.7]"));
    assert_ne!(mask("ctx 1 us"), mask("ctx 1 ms"));
}

#[test]
fn readme_states_the_workspace_rust_version() {
    let cargo = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let v = cargo
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = \"").and_then(|r| r.strip_suffix('"')))
        .expect("Cargo.toml states no workspace rust-version");
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(readme.contains(&format!("Rust {v};")), "README.md does not state Cargo.toml's rust-version {v} (as `Rust {v};`)");
    for m in ["Rust 1.8", "Rust 1.9"] {
        for (i, l) in readme.lines().enumerate() {
            assert!(!l.contains(m) || l.contains(&format!("Rust {v};")), "README.md:{}: another Rust version: {l}", i + 1);
        }
    }
}
