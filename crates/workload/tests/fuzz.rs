//! A deterministic, in-repo fuzzer (cargo-fuzz needs libfuzzer-sys, which is
//! not available offline here): seeded mutations of the example files are
//! fed to every parser, which must return Ok or Err but never panic, and a
//! workload file that parses must also validate.
//!
//! Targets: workload TOML, rt-app JSON, machine TOML, hwloc XML. Each test
//! runs `FUZZ_ITERS` mutations (default 2000) or for `FUZZ_SECS` seconds
//! when set (scripts/fuzz); `FUZZ_SEED` changes the seed.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn corpus(dirs: &[&str], ext: &str) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(root().join(d)) else { continue };
        let mut paths: Vec<PathBuf> = rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == ext)).collect();
        paths.sort();
        for p in paths {
            v.push(std::fs::read(p).unwrap());
        }
    }
    assert!(!v.is_empty(), "no .{ext} seed files in {dirs:?}");
    v
}

/// Tokens that steer mutations toward interesting places.
const DICT: &[&str] = &[
    "=",
    "\"",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    "-1",
    "0",
    "1",
    "4294967295",
    "18446744073709551615",
    "99999999999999999999",
    "-",
    "1e309",
    "NaN",
    "inf",
    "i",
    "j",
    "*",
    "/0",
    "%",
    "(",
    ")",
    "repeat = 0",
    "repeat=1000000",
    "\n[[task]]\n",
    "\n[[program]]\nops = [\"loop count=inf\"]\n",
    "\"barrier id=0 parties=0\"",
    "\"wake_queued chan=0 sem_base=4294967295 cost=1\"",
    "<",
    ">",
    "/>",
    "<object type=\"PU\" os_index=\"99999\"/>",
    "\"run\": -1",
    "\"loop\": 0",
    "\"instance\": 100000",
    "true",
    "null",
    "\u{0}",
    "\u{feff}",
    "é",
    "0x10",
    "1_000",
    "2us",
    "{i",
    "}",
];

fn mutate(rng: &mut Rng, seed: &[u8], all: &[Vec<u8>]) -> Vec<u8> {
    let mut d = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = d.len().max(1);
        match rng.below(7) {
            0 if !d.is_empty() => {
                let k = rng.below(d.len());
                d[k] ^= 1 << rng.below(8);
            }
            1 if !d.is_empty() => {
                let a = rng.below(d.len());
                let b = (a + 1 + rng.below(64)).min(d.len());
                d.drain(a..b);
            }
            2 => {
                let t = DICT[rng.below(DICT.len())].as_bytes();
                let k = rng.below(len + 1).min(d.len());
                d.splice(k..k, t.iter().copied());
            }
            3 if !d.is_empty() => {
                let a = rng.below(d.len());
                let b = (a + 1 + rng.below(200)).min(d.len());
                let chunk = d[a..b].to_vec();
                let k = rng.below(d.len());
                d.splice(k..k, chunk);
            }
            4 => {
                // Replace a number with another.
                let k = rng.below(len).min(d.len().saturating_sub(1));
                if let Some(p) = d[k..].iter().position(|c| c.is_ascii_digit()) {
                    let s = k + p;
                    let e = s + d[s..].iter().take_while(|c| c.is_ascii_digit()).count();
                    let n = ["0", "1", "7", "65535", "65536", "4294967296", "100000000"][rng.below(7)];
                    d.splice(s..e, n.bytes());
                }
            }
            5 => {
                // Splice in part of another file.
                let o = &all[rng.below(all.len())];
                if !o.is_empty() {
                    let a = rng.below(o.len());
                    let b = (a + rng.below(300)).min(o.len());
                    let k = rng.below(len + 1).min(d.len());
                    d.splice(k..k, o[a..b].iter().copied());
                }
            }
            _ if !d.is_empty() => {
                let k = rng.below(d.len());
                d.truncate(k);
            }
            _ => {}
        }
    }
    d
}

fn fuzz(name: &str, seeds: Vec<Vec<u8>>, target: impl Fn(&str)) {
    let iters: u64 = std::env::var("FUZZ_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(2000);
    let secs: Option<u64> = std::env::var("FUZZ_SECS").ok().and_then(|s| s.parse().ok());
    let seed: u64 = std::env::var("FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed);
    let mut rng = Rng((seed ^ (name.len() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1);
    for s in &seeds {
        target(&String::from_utf8_lossy(s));
    }
    let t0 = Instant::now();
    let mut n = 0u64;
    loop {
        match secs {
            Some(s) if t0.elapsed() >= Duration::from_secs(s) => break,
            None if n >= iters => break,
            _ => {}
        }
        let base = &seeds[rng.below(seeds.len())];
        let input = mutate(&mut rng, base, &seeds);
        let text = String::from_utf8_lossy(&input);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| target(&text)));
        if r.is_err() {
            let f = std::env::temp_dir().join(format!("schedlab-fuzz-{name}-crash.txt"));
            std::fs::write(&f, &input).unwrap();
            panic!("{name}: the parser panicked on input saved to {}", f.display());
        }
        n += 1;
    }
    eprintln!("fuzz {name}: {n} inputs, no panic");
}

#[test]
fn fuzz_workload_toml() {
    fuzz("workload-toml", corpus(&["examples/workloads"], "toml"), |t| {
        if let Ok(w) = schedlab_workload::file::from_toml_str(t, "f.toml") {
            w.validate().expect("a parsed workload file validates");
            // Export round trip holds for whatever parses.
            let again = schedlab_workload::file::to_toml(&w, "");
            let back = schedlab_workload::file::from_toml_str(&again, "g.toml").expect("re-export parses");
            assert_eq!(back.programs, w.programs);
        }
    });
}

#[test]
fn fuzz_rtapp_json() {
    fuzz("rtapp-json", corpus(&["examples/workloads"], "json"), |t| {
        if let Ok(w) = schedlab_workload::rtapp::from_json_str(t, "f.json") {
            w.validate().expect("an imported workload validates");
        }
    });
}

#[test]
fn fuzz_machine_toml() {
    fuzz("machine-toml", corpus(&["examples/machines", "crates/machine/presets"], "toml"), |t| {
        let _ = schedlab_machine::from_toml_str(t, "f.toml");
    });
}

#[test]
fn fuzz_hwloc_xml() {
    fuzz("hwloc-xml", corpus(&["examples/machines"], "xml"), |t| {
        let _ = schedlab_machine::from_hwloc_xml_str(t, "f.xml");
    });
}
