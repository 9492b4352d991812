//! rt-app JSON import (benchmark-workloads §11; docs/workload-format.md,
//! "rt-app import"). Events map onto ops:
//!
//! | rt-app | ops |
//! |---|---|
//! | `run`, `runtime` (us) | `Run` |
//! | `sleep` (us) | `Sleep` |
//! | `timer` {period, mode} | `Timer`: sleep to the next activation of the thread's grid (F-107) |
//! | `lock` / `unlock` m | `SemWait` / `SemPost` on a mutex (initial 1) |
//! | `signal` / `broad` c | `SemWake` 1 / all (condvar: not remembered) |
//! | `wait` {ref c, mutex m} | unlock m, `SemWait` c, lock m |
//! | `sync` {ref c, mutex m} | lock m, signal c, wait c (unlock/relock m), unlock m |
//! | `barrier` b | `Barrier` with all instances of all threads that use b |
//! | `suspend` / `resume` t | `SemWait` / `SemWake` all on the condvar of thread t |
//! | `sem_post` / `sem_wait` s | `SemPost` / `SemWait` (remembered) |
//! | `yield`, `mem`, `iorun`, `memrun` | nothing (F-107) |
//!
//! Extensions (not rt-app): a top-level `"channels": {"name": {"capacity": n,
//! "sync": bool, "kind": "socket"|"pipe"}}` and the events `"send": name |
//! {"ref": name, "cost": us}`, `"recv": ...` and `"poll": name`.
//!
//! Every thread counts one completed loop of its phases; the metric is loops/s.
//! All tasks are threads of one process; SCHED_OTHER/BATCH/IDLE are run as
//! fair tasks with `priority` as nice, RT and DEADLINE are rejected.

use crate::{ChannelKind, ChannelSpec, MetricSpec, Op, SemSpec, TaskSpec, Workload, WorkloadError};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON value keeping object keys in document order (rt-app events are ordered).
#[derive(Debug, Clone)]
enum J {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl<'de> Deserialize<'de> for J {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<J, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = J;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<J, E> {
                Ok(J::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<J, E> {
                Ok(J::Bool(b))
            }
            fn visit_i64<E>(self, n: i64) -> Result<J, E> {
                Ok(J::Num(n as f64))
            }
            fn visit_u64<E>(self, n: u64) -> Result<J, E> {
                Ok(J::Num(n as f64))
            }
            fn visit_f64<E>(self, n: f64) -> Result<J, E> {
                Ok(J::Num(n))
            }
            fn visit_str<E>(self, s: &str) -> Result<J, E> {
                Ok(J::Str(s.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<J, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element()? {
                    v.push(x);
                }
                Ok(J::Arr(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<J, A::Error> {
                let mut v = Vec::new();
                while let Some((k, x)) = a.next_entry::<String, J>()? {
                    v.push((k, x));
                }
                Ok(J::Obj(v))
            }
        }
        d.deserialize_any(V)
    }
}

struct Cx<'a> {
    file: &'a str,
}

impl Cx<'_> {
    fn err(&self, path: &str, msg: impl std::fmt::Display) -> WorkloadError {
        WorkloadError(format!("{}: {path}: {msg}", self.file))
    }
}

fn obj<'a>(cx: &Cx, path: &str, j: &'a J) -> Result<&'a [(String, J)], WorkloadError> {
    match j {
        J::Obj(v) => Ok(v),
        _ => Err(cx.err(path, "expected an object")),
    }
}

/// A non-negative whole number (us, counts); `allow_neg1` for loop = -1.
fn int(cx: &Cx, path: &str, j: &J, allow_neg1: bool) -> Result<i64, WorkloadError> {
    match j {
        J::Num(x) if x.fract() == 0.0 && *x >= 0.0 && *x < 1e15 => Ok(*x as i64),
        J::Num(x) if allow_neg1 && *x == -1.0 => Ok(-1),
        _ => Err(cx.err(path, format!("expected a whole number >= 0{}", if allow_neg1 { " or -1" } else { "" }))),
    }
}

fn string<'a>(cx: &Cx, path: &str, j: &'a J) -> Result<&'a str, WorkloadError> {
    match j {
        J::Str(s) => Ok(s),
        _ => Err(cx.err(path, "expected a string")),
    }
}

/// Named resources, numbered in order of first use.
#[derive(Default)]
struct Names {
    sems: Vec<(String, SemSpec)>,
    chans: Vec<String>,
}

impl Names {
    fn sem(&mut self, key: String, initial: u32) -> u32 {
        if let Some(i) = self.sems.iter().position(|(k, _)| *k == key) {
            return i as u32;
        }
        self.sems.push((key, SemSpec { initial, sync: false, barging: false }));
        self.sems.len() as u32 - 1
    }
}

const EVENT_KEYS: &[&str] = &[
    "run", "runtime", "sleep", "timer", "lock", "unlock", "signal", "broad", "wait", "sync", "barrier", "suspend", "resume", "sem_post",
    "sem_wait", "yield", "mem", "iorun", "memrun", "send", "recv", "poll", "fork",
];
const PROP_KEYS: &[&str] =
    &["policy", "priority", "dl-runtime", "dl-period", "dl-deadline", "cpus", "nodes_membind", "util_min", "util_max", "taskgroup"];

/// The event a key names: the longest event name that prefixes it ("run0", "sleep2").
fn event_of(key: &str) -> Option<&'static str> {
    EVENT_KEYS.iter().filter(|e| key.starts_with(*e)).max_by_key(|e| e.len()).copied()
}

/// Parse an rt-app JSON file's text; `file` names it in errors.
pub fn from_json_str(text: &str, file: &str) -> Result<Workload, WorkloadError> {
    let cx = Cx { file };
    let root: J = serde_json::from_str(text).map_err(|e| WorkloadError(format!("{file}:{}: {e}", e.line())))?;
    let top = obj(&cx, "(top level)", &root)?;
    let mut tasks_j = None;
    let mut chans = Vec::new();
    let mut names = Names::default();
    let mut time_bounded = false;
    for (k, v) in top {
        match k.as_str() {
            "tasks" => tasks_j = Some(obj(&cx, "tasks", v)?),
            "resources" => {}
            "global" => {
                for (gk, gv) in obj(&cx, "global", v)? {
                    let path = format!("global.{gk}");
                    match gk.as_str() {
                        "duration" => time_bounded |= int(&cx, &path, gv, true)? != -1,
                        "default_policy" => check_policy(&cx, &path, gv)?,
                        "calibration" | "pi_enabled" | "lock_pages" | "logdir" | "log_basename" | "log_size" | "ftrace" | "gnuplot"
                        | "io_device" | "mem_buffer_size" | "cumulative_slack" => {}
                        _ => return Err(cx.err(&path, "unknown global key")),
                    }
                }
            }
            "channels" => {
                for (name, c) in obj(&cx, "channels", v)? {
                    let path = format!("channels.{name}");
                    let mut spec = ChannelSpec { capacity: 64, sync: true, kind: ChannelKind::Socket, epoll: None };
                    for (ck, cv) in obj(&cx, &path, c)? {
                        let p = format!("{path}.{ck}");
                        match ck.as_str() {
                            "capacity" => {
                                spec.capacity = int(&cx, &p, cv, false)?.clamp(0, u32::MAX as i64) as u32;
                                if spec.capacity == 0 {
                                    return Err(cx.err(&p, "must be at least 1"));
                                }
                            }
                            "sync" => match cv {
                                J::Bool(b) => spec.sync = *b,
                                _ => return Err(cx.err(&p, "expected true or false")),
                            },
                            "kind" => {
                                spec.kind = match string(&cx, &p, cv)? {
                                    "socket" => ChannelKind::Socket,
                                    "pipe" => ChannelKind::Pipe { msgs_per_page: 1 },
                                    k => return Err(cx.err(&p, format!("{k:?}: expected \"socket\" or \"pipe\""))),
                                }
                            }
                            _ => return Err(cx.err(&p, "unknown channel key (capacity, sync, kind)")),
                        }
                    }
                    if let ChannelKind::Pipe { .. } = spec.kind {
                        spec.kind = ChannelKind::Pipe { msgs_per_page: spec.capacity.div_ceil(16).max(1) };
                    }
                    names.chans.push(name.clone());
                    chans.push(spec);
                }
            }
            _ => return Err(cx.err(k, "unknown top-level key (tasks, global, resources, channels)")),
        }
    }
    let tasks_j = tasks_j.ok_or_else(|| cx.err("(top level)", "no \"tasks\""))?;
    if tasks_j.is_empty() {
        return Err(cx.err("tasks", "no task"));
    }
    // Barrier parties: instances of every thread that uses the barrier.
    let mut barrier_users: Vec<(String, u32)> = Vec::new();
    for (name, t) in tasks_j {
        let inst = instances(&cx, name, t)?;
        let mut used = Vec::new();
        collect_barriers(t, &mut used);
        for b in used {
            match barrier_users.iter_mut().find(|(n, _)| *n == b) {
                Some(e) => e.1 += inst,
                None => barrier_users.push((b, inst)),
            }
        }
    }
    let mut w = Workload {
        memory: Vec::new(),
        arrivals: None,
        name: file.rsplit('/').next().unwrap_or(file).trim_end_matches(".json").to_string(),
        params: Vec::new(),
        programs: Vec::new(),
        tasks: Vec::new(),
        channels: Vec::new(),
        sems: Vec::new(),
        metric: MetricSpec::Rate { name: "loops".into(), unit: "loops/s".into(), counter: 0, start: None, end: None },
        time_bounded,
        jitter_pct: 0,
        groups: Vec::new(),
    };
    for (name, t) in tasks_j {
        let path = format!("tasks.{name}");
        let inst = instances(&cx, name, t)?;
        let mut prog = Vec::new();
        let mut nice = 0i8;
        let mut cpus = None;
        let mut thread_loop = -1i64;
        let mut delay = 0;
        let mut phases: Vec<(String, &J)> = Vec::new();
        let mut inline = false;
        for (k, v) in obj(&cx, &path, t)? {
            let p = format!("{path}.{k}");
            match k.as_str() {
                "instance" => {}
                "loop" => thread_loop = int(&cx, &p, v, true)?,
                "delay" => delay = int(&cx, &p, v, false)?,
                "phases" => {
                    for (pk, pv) in obj(&cx, &p, v)? {
                        phases.push((format!("{p}.{pk}"), pv));
                    }
                }
                _ if PROP_KEYS.contains(&k.as_str()) => prop(&cx, &p, k, v, &mut nice, &mut cpus)?,
                _ if event_of(k).is_some() => inline = true,
                _ => return Err(cx.err(&p, "unknown thread key")),
            }
        }
        if inline && !phases.is_empty() {
            return Err(cx.err(&path, "a thread has either \"phases\" or events, not both"));
        }
        if inline {
            phases.push((path.clone(), t));
        }
        if delay > 0 {
            prog.push(Op::Sleep { ns: delay as u64 * 1000 });
        }
        prog.push(Op::Loop { count: if thread_loop < 0 { u64::MAX } else { thread_loop.max(1) as u64 } });
        if thread_loop < 0 {
            w.time_bounded = true;
        }
        for (ppath, pj) in &phases {
            phase(&cx, ppath, pj, name, &mut names, &barrier_users, &mut prog, &mut nice, &mut cpus)?;
        }
        prog.push(Op::Count { id: 0, n: 1 });
        prog.push(Op::EndLoop);
        if thread_loop == 0 {
            return Err(cx.err(&format!("{path}.loop"), "loop 0 never runs; use -1 (forever) or a count"));
        }
        w.programs.push(prog);
        let pi = w.programs.len() as u32 - 1;
        for k in 0..inst {
            w.tasks.push(TaskSpec {
                name: if inst == 1 { name.clone() } else { format!("{name}-{k}") },
                program: pi,
                mm: 0,
                nice,
                cpus: cpus.clone(),
                start: true,
                group: 0,
                footprint_kib: None,
                shared: None,
                timer_slack_ns: crate::DEFAULT_TIMER_SLACK_NS,
            });
        }
    }
    if w.tasks.is_empty() {
        return Err(cx.err("tasks", "every task has instance 0: nothing runs"));
    }
    // Resolve channel names used by events into indices (already ordered as declared).
    w.channels = chans;
    w.sems = names.sems.into_iter().map(|(_, s)| s).collect();
    w.validate().map_err(|e| WorkloadError(format!("{file}: {}", e.0)))?;
    Ok(w)
}

fn instances(cx: &Cx, name: &str, t: &J) -> Result<u32, WorkloadError> {
    for (k, v) in obj(cx, &format!("tasks.{name}"), t)? {
        if k == "instance" {
            let n = int(cx, &format!("tasks.{name}.instance"), v, false)?;
            if n > 100_000 {
                return Err(cx.err(&format!("tasks.{name}.instance"), "at most 100000"));
            }
            return Ok(n as u32);
        }
    }
    Ok(1)
}

fn collect_barriers(j: &J, out: &mut Vec<String>) {
    if let J::Obj(v) = j {
        for (k, x) in v {
            if event_of(k) == Some("barrier") {
                if let J::Str(s) = x {
                    if !out.contains(s) {
                        out.push(s.clone());
                    }
                }
            } else {
                collect_barriers(x, out);
            }
        }
    }
}

fn check_policy(cx: &Cx, path: &str, v: &J) -> Result<(), WorkloadError> {
    match string(cx, path, v)? {
        "SCHED_OTHER" | "SCHED_BATCH" | "SCHED_IDLE" => Ok(()),
        p @ ("SCHED_RR" | "SCHED_FIFO" | "SCHED_DEADLINE") => Err(cx.err(path, format!("{p}: schedlab models the fair class only"))),
        p => Err(cx.err(path, format!("{p:?}: unknown policy"))),
    }
}

fn prop(cx: &Cx, path: &str, k: &str, v: &J, nice: &mut i8, cpus: &mut Option<Vec<u16>>) -> Result<(), WorkloadError> {
    match k {
        "policy" => check_policy(cx, path, v),
        "priority" => match v {
            J::Num(x) if x.fract() == 0.0 && (-20.0..=19.0).contains(x) => {
                *nice = *x as i8;
                Ok(())
            }
            _ => Err(cx.err(path, "expected a nice value between -20 and 19")),
        },
        "cpus" => match v {
            J::Arr(a) if !a.is_empty() => {
                let mut c = Vec::new();
                for (i, x) in a.iter().enumerate() {
                    let n = int(cx, &format!("{path}[{i}]"), x, false)?;
                    if n > u16::MAX as i64 {
                        return Err(cx.err(path, "CPU number too large"));
                    }
                    c.push(n as u16);
                }
                *cpus = Some(c);
                Ok(())
            }
            _ => Err(cx.err(path, "expected a non-empty list of CPU numbers")),
        },
        // dl-runtime (custom slice), NUMA binding, uclamp and cgroups are not modelled (F-107).
        _ => Ok(()),
    }
}

#[allow(clippy::too_many_arguments)]
fn phase(
    cx: &Cx,
    path: &str,
    pj: &J,
    thread: &str,
    names: &mut Names,
    barriers: &[(String, u32)],
    prog: &mut Vec<Op>,
    nice: &mut i8,
    cpus: &mut Option<Vec<u16>>,
) -> Result<(), WorkloadError> {
    let entries = obj(cx, path, pj)?;
    let mut count = 1u64;
    let inline = pj_is_thread(path);
    for (k, v) in entries {
        if k == "loop" && !inline {
            let n = int(cx, &format!("{path}.loop"), v, true)?;
            count = if n < 0 { u64::MAX } else { n as u64 };
        }
    }
    if count == 0 {
        return Ok(());
    }
    prog.push(Op::Loop { count });
    let us = |p: &str, v: &J| int(cx, p, v, false).map(|x| x as u64 * 1000);
    let refname = |p: &str, v: &J, key: &str| -> Result<String, WorkloadError> {
        match v {
            J::Str(s) => Ok(s.clone()),
            J::Obj(o) => o
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, x)| string(cx, p, x).map(str::to_string))
                .ok_or_else(|| cx.err(p, format!("needs \"{key}\"")))?,
            _ => Err(cx.err(p, "expected a name or an object")),
        }
    };
    let field = |_p: &str, v: &J, key: &str| -> Option<J> {
        match v {
            J::Obj(o) => o.iter().find(|(k, _)| k == key).map(|(_, x)| x.clone()),
            _ => None,
        }
    };
    for (k, v) in entries {
        let p = format!("{path}.{k}");
        if k == "loop" || k == "instance" || k == "delay" {
            continue;
        }
        if PROP_KEYS.contains(&k.as_str()) {
            prop(cx, &p, k, v, nice, cpus)?;
            continue;
        }
        let Some(ev) = event_of(k) else {
            return Err(cx.err(&p, "unknown event"));
        };
        let mutex = |names: &mut Names, m: String| names.sem(format!("mutex:{m}"), 1);
        let cond = |names: &mut Names, c: String| names.sem(format!("cond:{c}"), 0);
        let chan = |chans: &[String], c: String| -> Result<u32, WorkloadError> {
            names_chan(chans, &c).ok_or_else(|| cx.err(&p, format!("channel {c:?} is not declared in \"channels\"")))
        };
        match ev {
            "run" | "runtime" => {
                prog.push(Op::Run { ns: us(&p, v)? });
            }
            "sleep" => prog.push(Op::Sleep { ns: us(&p, v)? }),
            "timer" => {
                let per = field(&p, v, "period").ok_or_else(|| cx.err(&p, "needs \"period\""))?;
                let period = us(&format!("{p}.period"), &per)?;
                if period == 0 {
                    return Err(cx.err(&format!("{p}.period"), "a timer needs a period above 0 us"));
                }
                // rt-app's timer resource: "mode" "relative" (its default) or "absolute".
                let absolute = match field(&p, v, "mode") {
                    None => false,
                    Some(J::Str(m)) if m == "relative" => false,
                    Some(J::Str(m)) if m == "absolute" => true,
                    Some(_) => return Err(cx.err(&format!("{p}.mode"), "expected \"relative\" or \"absolute\"")),
                };
                // FIDELITY(F-107): the activation grid is per thread, also for a timer several threads name.
                prog.push(Op::Timer { period, absolute });
            }
            "lock" => {
                let m = mutex(names, string(cx, &p, v)?.to_string());
                prog.push(Op::SemWait { sem: m });
            }
            "unlock" => {
                let m = mutex(names, string(cx, &p, v)?.to_string());
                prog.push(Op::SemPost { sem: m, n: 1 });
            }
            "signal" | "broad" => {
                let c = cond(names, string(cx, &p, v)?.to_string());
                prog.push(Op::SemWake { sem: c, n: if ev == "signal" { 1 } else { u32::MAX } });
            }
            "wait" | "sync" => {
                let c = cond(names, refname(&p, v, "ref")?);
                let m = mutex(names, refname(&p, v, "mutex")?);
                if ev == "sync" {
                    prog.extend([Op::SemWait { sem: m }, Op::SemWake { sem: c, n: 1 }]);
                }
                prog.extend([Op::SemPost { sem: m, n: 1 }, Op::SemWait { sem: c }, Op::SemWait { sem: m }]);
                if ev == "sync" {
                    prog.push(Op::SemPost { sem: m, n: 1 });
                }
            }
            "barrier" => {
                let b = string(cx, &p, v)?;
                let id = barriers.iter().position(|(n, _)| n == b).unwrap_or(0) as u32;
                let parties = barriers.iter().find(|(n, _)| n == b).map_or(1, |x| x.1);
                prog.push(Op::Barrier { id, parties });
            }
            "suspend" => {
                let c = cond(names, format!("thread:{thread}"));
                prog.push(Op::SemWait { sem: c });
            }
            "resume" => {
                let c = cond(names, format!("thread:{}", string(cx, &p, v)?));
                prog.push(Op::SemWake { sem: c, n: u32::MAX });
            }
            "sem_post" => {
                let s = names.sem(format!("sem:{}", string(cx, &p, v)?), 0);
                prog.push(Op::SemPost { sem: s, n: 1 });
            }
            "sem_wait" => {
                let s = names.sem(format!("sem:{}", string(cx, &p, v)?), 0);
                prog.push(Op::SemWait { sem: s });
            }
            "send" | "recv" => {
                let c = chan(&names.chans, refname(&p, v, "ref")?)?;
                let cost = match field(&p, v, "cost") {
                    Some(x) => us(&format!("{p}.cost"), &x)?,
                    None => 0,
                };
                prog.push(if ev == "send" { Op::Write { chan: c, cost } } else { Op::Read { chan: c, cost } });
            }
            "poll" => {
                let c = chan(&names.chans, string(cx, &p, v)?.to_string())?;
                prog.push(Op::Poll { chan: c });
            }
            "fork" => return Err(cx.err(&p, "fork is not supported by the importer")),
            // yield, mem, iorun, memrun: no effect in the model (F-107).
            _ => {}
        }
    }
    prog.push(Op::EndLoop);
    Ok(())
}

/// Events written directly in a thread (no "phases") share its "loop" key,
/// which then counts thread loops, not phase loops.
fn pj_is_thread(path: &str) -> bool {
    !path.contains(".phases.")
}

fn names_chan(chans: &[String], c: &str) -> Option<u32> {
    chans.iter().position(|x| x == c).map(|i| i as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PINGPONG: &str = r#"{
      "global": {"duration": 2, "calibration": "CPU0", "default_policy": "SCHED_OTHER"},
      "tasks": {
        "ping": {"loop": -1, "run0": 1000, "resume": "pong", "suspend": ""},
        "pong": {"loop": -1, "suspend": "", "run": 1000, "resume": "ping"},
        "pool": {"instance": 3, "cpus": [0, 1], "priority": 5,
                 "phases": {"p1": {"loop": 10, "run": 500, "barrier": "b", "sleep": 100},
                            "p2": {"run": 200, "timer": {"ref": "unique", "period": 1000}}}}
      }
    }"#;

    #[test]
    fn imports_events_in_order() {
        let w = from_json_str(PINGPONG, "pp.json").unwrap();
        assert_eq!(w.tasks.len(), 5);
        assert!(w.time_bounded);
        assert_eq!(
            w.programs[0][1..5],
            [Op::Loop { count: 1 }, Op::Run { ns: 1_000_000 }, Op::SemWake { sem: 0, n: u32::MAX }, Op::SemWait { sem: 1 }]
        );
        let pool = &w.programs[2];
        assert!(pool.contains(&Op::Barrier { id: 0, parties: 3 }));
        assert!(pool.contains(&Op::Timer { period: 1_000_000, absolute: false }), "timer: rt-app's relative mode by default");
        assert_eq!(w.tasks[2].nice, 5);
        assert_eq!(w.tasks[2].cpus, Some(vec![0, 1]));
        assert!(w.sems.iter().all(|s| !s.sync), "rt-app wakeups are futexes");
    }

    #[test]
    fn channels_extension_and_errors() {
        let j = r#"{"channels": {"req": {"capacity": 4, "sync": true}},
                    "tasks": {"a": {"loop": 100, "send": {"ref": "req", "cost": 2}},
                              "b": {"loop": 100, "recv": "req", "run": 5}}}"#;
        let w = from_json_str(j, "c.json").unwrap();
        assert_eq!(w.channels.len(), 1);
        assert!(!w.time_bounded);
        assert!(w.programs[0].contains(&Op::Write { chan: 0, cost: 2000 }));
        let e = from_json_str(r#"{"tasks": {"a": {"run": -5}}}"#, "x.json").unwrap_err().0;
        assert!(e.contains("x.json: tasks.a.run"), "{e}");
        let e = from_json_str(r#"{"tasks": {"a": {"policy": "SCHED_FIFO", "run": 5}}}"#, "x.json").unwrap_err().0;
        assert!(e.contains("fair class"), "{e}");
        let e = from_json_str("{\"tasks\": \n {\"a\": [}", "x.json").unwrap_err().0;
        assert!(e.starts_with("x.json:2"), "{e}");
        let e = from_json_str(r#"{"tasks": {"a": {"recv": "nope"}}}"#, "x.json").unwrap_err().0;
        assert!(e.contains("not declared"), "{e}");
        let e = from_json_str(r#"{"tasks": {"a": {"sem_wait": "s"}}}"#, "x.json").unwrap_err().0;
        assert!(e.contains("nothing posts it"), "{e}");
    }
}
