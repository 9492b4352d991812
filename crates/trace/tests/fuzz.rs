//! Deterministic in-repo fuzzer of the trace parsers (as crates/workload/tests/fuzz.rs):
//! seeded mutations of the committed traces (crates/cli/tests/data) go
//! through parse, analyse and import, which must return Ok or Err but never
//! panic. `FUZZ_ITERS` (default 300) or `FUZZ_SECS` (scripts/fuzz), `FUZZ_SEED`.

use std::time::{Duration, Instant};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const DICT: &[&str] = &[
    "[",
    "]",
    "-",
    ":",
    "=",
    " ",
    "==>",
    "(",
    ")",
    "0",
    "4294967296",
    "99999999999999999999",
    ".",
    "prev_state=",
    "pid=",
    "[LOST 3 EVENTS]",
    "sched_switch: ",
    "sched_waking: ",
    "sched:sched_process_fork: ",
    "\n",
    "é",
    "\u{0}",
    "/",
];

fn seeds() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/tests/data");
    let mut v = Vec::new();
    for f in ["pipe-500.ftrace", "hackbench-g1-l5.ftrace", "pipe-300.perf", "hackbench-g1-l5.perf", "pipe-50.tracecmd"] {
        let t = std::fs::read_to_string(dir.join(f)).unwrap();
        v.push(t.lines().take(300).collect::<Vec<_>>().join("\n") + "\n");
    }
    v
}

fn mutate(rng: &mut Rng, s: &str) -> String {
    let mut d = s.as_bytes().to_vec();
    for _ in 0..1 + rng.below(4) {
        if d.is_empty() {
            break;
        }
        let k = rng.below(d.len());
        match rng.below(5) {
            0 => d[k] ^= 1 << rng.below(8),
            1 => {
                let e = (k + 1 + rng.below(80)).min(d.len());
                d.drain(k..e);
            }
            2 => {
                let t = DICT[rng.below(DICT.len())].as_bytes();
                d.splice(k..k, t.iter().copied());
            }
            3 => {
                let e = (k + 1 + rng.below(400)).min(d.len());
                let chunk = d[k..e].to_vec();
                let at = rng.below(d.len());
                d.splice(at..at, chunk);
            }
            _ => d.truncate(k),
        }
    }
    String::from_utf8_lossy(&d).into_owned()
}

#[test]
fn fuzz_trace_text() {
    let iters: u64 = std::env::var("FUZZ_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(300);
    let secs: Option<u64> = std::env::var("FUZZ_SECS").ok().and_then(|s| s.parse().ok());
    let mut rng = Rng(std::env::var("FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed) | 1);
    let seeds = seeds();
    let target = |t: &str| {
        if let Ok((_, a)) = schedlab_trace::analyse(t, None, true) {
            let _ = schedlab_trace::Profile::new(&a, "fuzz", 1);
            if let Ok(imp) = schedlab_trace::import(&a, &Default::default()) {
                imp.workload.validate().expect("an imported workload validates");
            }
        }
    };
    for s in &seeds {
        target(s);
    }
    let t0 = Instant::now();
    let mut n = 0u64;
    loop {
        match secs {
            Some(s) if t0.elapsed() >= Duration::from_secs(s) => break,
            None if n >= iters => break,
            _ => {}
        }
        let base = rng.below(seeds.len());
        let input = mutate(&mut rng, &seeds[base]);
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| target(&input))).is_err() {
            let f = std::env::temp_dir().join("schedlab-fuzz-trace-text-crash.txt");
            std::fs::write(&f, &input).unwrap();
            panic!("trace-text: a parser panicked on input saved to {}", f.display());
        }
        n += 1;
    }
    eprintln!("fuzz trace-text: {n} inputs, no panic");
}
