#!/usr/bin/env python3
"""Check a `schedlab run --trace F.pftrace --ftrace F.txt --json` triple.

    check_perfetto_trace.py TRACE.pftrace FTRACE.txt RUN.json

The Perfetto file is parsed with the protobuf bindings that ship in the
`perfetto` PyPI package (perfetto.protos.perfetto.trace.perfetto_trace_pb2):
an independent reader of the field numbers schedlab writes by hand. The
ftrace text is parsed with the line regex of Perfetto's systrace importer
(src/trace_processor/importers/systrace/systrace_line_tokenizer.cc). Checks:

* the proto has SystemInfo.utsname (sysname Linux, a release >= 4.14), a
  ProcessTree naming every pid that appears, and FtraceEventBundles with a
  valid cpu and per-CPU non-decreasing timestamps;
* per CPU, each sched_switch's prev_pid is the previous switch's next_pid;
* the proto and the text hold the same events (name, cpu, time in us,
  fields), line for line once sorted;
* the counts agree with the run's own summary: sched_switch with a task as
  prev = voluntary + involuntary switches, sched_waking = wakeups,
  sched_migrate_task = migrations, sched_wakeup_new = tasks created,
  sched_process_exit = tasks exited.

Exit status: 0 ok, 1 a check failed, 3 the perfetto package is missing.
"""

import collections
import json
import re
import sys

try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError as e:  # pragma: no cover - environment problem, not a check
    sys.stderr.write(
        f"cannot import perfetto's protobuf bindings ({e}); install them with "
        "`bash scripts/ensure-python.sh` (scripts/test and .ci/run do this) or "
        "`pip install perfetto protobuf`\n"
    )
    sys.exit(3)

# Perfetto's systrace line tokenizer (groups: pid, tgid, cpu, flags, ts, event).
LINE_RE = re.compile(
    r"-(\d+)\s+\(?\s*(\d+|-+)?\)?\s?\[(\d+)\]\s*([a-zA-Z.]{3}[0-9a-f.]{1,2}\s*)?(\d+\.\d+):\s+(\S+):"
)
STATE_LETTERS = {0: "R", 0x100: "R+", 0x01: "S", 0x02: "D", 0x10: "X", 0x20: "Z"}

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
    return cond


def proto_events(trace):
    """(cpu, FtraceEvent) in file order, plus system_info and process_tree."""
    events, sysinfo, threads = [], None, {}
    for pkt in trace.packet:
        check(pkt.trusted_packet_sequence_id != 0, "a packet has no trusted_packet_sequence_id")
        if pkt.HasField("system_info"):
            sysinfo = pkt.system_info
        if pkt.HasField("process_tree"):
            for t in pkt.process_tree.threads:
                threads[t.tid] = (t.name, t.tgid)
            procs = {p.pid for p in pkt.process_tree.processes}
            for tid, (_, tgid) in threads.items():
                check(tgid in procs, f"thread {tid} names tgid {tgid}, which is not among the processes")
        if pkt.HasField("ftrace_events"):
            b = pkt.ftrace_events
            for ev in b.event:
                events.append((b.cpu, ev))
    return events, sysinfo, threads


def canon_proto(cpu, ev):
    """A comparable tuple: (event, cpu, ts in us, current pid, payload)."""
    kind = ev.WhichOneof("event")
    us = ev.timestamp // 1000
    if kind == "sched_switch":
        s = ev.sched_switch
        state = STATE_LETTERS.get(s.prev_state, f"?{s.prev_state:#x}")
        payload = (s.prev_comm, s.prev_pid, s.prev_prio, state, s.next_comm, s.next_pid, s.next_prio)
    elif kind in ("sched_waking", "sched_wakeup", "sched_wakeup_new"):
        s = getattr(ev, kind)
        payload = (s.comm, s.pid, s.prio, s.target_cpu)
    elif kind == "sched_migrate_task":
        s = ev.sched_migrate_task
        payload = (s.comm, s.pid, s.prio, s.orig_cpu, s.dest_cpu)
    elif kind == "sched_process_fork":
        s = ev.sched_process_fork
        payload = (s.parent_comm, s.parent_pid, s.child_comm, s.child_pid)
    elif kind == "sched_process_exit":
        s = ev.sched_process_exit
        payload = (s.comm, s.pid, s.prio)
    else:
        payload = ("unexpected",)
    return (kind, cpu, us, ev.pid, payload)


PAYLOAD_RE = {
    "sched_switch": re.compile(
        r"prev_comm=(.*) prev_pid=(\d+) prev_prio=(-?\d+) prev_state=(\S+) ==> "
        r"next_comm=(.*) next_pid=(\d+) next_prio=(-?\d+)$"
    ),
    "wake": re.compile(r"comm=(.*) pid=(\d+) prio=(-?\d+) target_cpu=(\d{3})$"),
    "sched_migrate_task": re.compile(r"comm=(.*) pid=(\d+) prio=(-?\d+) orig_cpu=(\d+) dest_cpu=(\d+)$"),
    "sched_process_fork": re.compile(r"comm=(.*) pid=(\d+) child_comm=(.*) child_pid=(\d+)$"),
    "sched_process_exit": re.compile(r"comm=(.*) pid=(\d+) prio=(-?\d+)$"),
}


def as_ints(groups, str_positions):
    return tuple(g if i in str_positions else int(g) for i, g in enumerate(groups))


def canon_text(path):
    out, header_ok, entries = [], False, None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.startswith("#"):
                header_ok |= line == "# tracer: nop"
                m = re.match(r"# entries-in-buffer/entries-written: (\d+)/(\d+)", line)
                if m:
                    entries = int(m.group(1))
                continue
            m = LINE_RE.search(line)
            if not check(m is not None, f"{path}:{n}: Perfetto's systrace tokenizer would not match: {line!r}"):
                continue
            pid, _, cpu, _, ts, name = m.groups()
            secs, frac = ts.split(".")
            check(len(frac) == 6, f"{path}:{n}: timestamp {ts} is not seconds.microseconds")
            us = int(secs) * 1_000_000 + int(frac)
            payload = line[m.end():].strip()
            key = "wake" if name in ("sched_waking", "sched_wakeup", "sched_wakeup_new") else name
            pm = PAYLOAD_RE.get(key, re.compile(r"$^")).match(payload)
            if not check(pm is not None, f"{path}:{n}: unexpected {name} payload {payload!r}"):
                continue
            strs = {"sched_switch": {0, 3, 4}, "wake": {0}, "sched_migrate_task": {0},
                    "sched_process_fork": {0, 2}, "sched_process_exit": {0}}[key]
            out.append((name, int(cpu), us, int(pid), as_ints(pm.groups(), strs)))
    check(header_ok, f"{path}: no '# tracer: nop' header (Perfetto's text sniffer needs it)")
    check(entries == len(out), f"{path}: header says {entries} entries, file has {len(out)}")
    return out


def main(argv):
    if len(argv) != 4:
        sys.stderr.write(__doc__)
        return 2
    pf_path, txt_path, json_path = argv[1:]
    trace = pb.Trace()
    with open(pf_path, "rb") as f:
        trace.ParseFromString(f.read())
    with open(json_path, encoding="utf-8") as f:
        run = json.load(f)
    events, sysinfo, threads = proto_events(trace)
    nr_cpus = len(run["cpus"])

    if check(sysinfo is not None and sysinfo.HasField("utsname"), "no SystemInfo.utsname packet"):
        u = sysinfo.utsname
        check(u.sysname == "Linux", f"utsname.sysname is {u.sysname!r}")
        m = re.match(r"(\d+)\.(\d+)", u.release)
        check(m is not None and (int(m.group(1)), int(m.group(2))) >= (4, 14),
              f"utsname.release {u.release!r} is not a >= 4.14 kernel release (prev_state decoding)")
        check(sysinfo.num_cpus == nr_cpus, f"SystemInfo.num_cpus {sysinfo.num_cpus} != {nr_cpus}")

    counts = collections.Counter(ev.WhichOneof("event") for _, ev in events)
    last_ts = {}
    last_next = {}
    pids = set()
    for cpu, ev in events:
        if not check(0 <= cpu < nr_cpus, f"bundle cpu {cpu} outside 0..{nr_cpus}"):
            continue
        check(ev.timestamp >= last_ts.get(cpu, 0), f"cpu {cpu}: timestamp {ev.timestamp} goes back from {last_ts.get(cpu)}")
        last_ts[cpu] = ev.timestamp
        kind = ev.WhichOneof("event")
        if kind == "sched_switch":
            s = ev.sched_switch
            check(ev.pid == s.prev_pid, f"cpu {cpu} @{ev.timestamp}: event pid {ev.pid} is not prev_pid {s.prev_pid}")
            if cpu in last_next:
                check(s.prev_pid == last_next[cpu],
                      f"cpu {cpu} @{ev.timestamp}: prev_pid {s.prev_pid} but the previous switch went to {last_next[cpu]}")
            last_next[cpu] = s.next_pid
            check(s.prev_state in STATE_LETTERS, f"unknown prev_state {s.prev_state:#x}")
            for pid, comm in ((s.prev_pid, s.prev_comm), (s.next_pid, s.next_comm)):
                if pid == 0:
                    check(comm == f"swapper/{cpu}", f"idle task on cpu {cpu} is called {comm!r}")
                else:
                    pids.add(pid)
                    check(threads.get(pid, (None,))[0] == comm, f"pid {pid} is {comm!r} in sched_switch, "
                          f"{threads.get(pid, ('missing',))[0]!r} in the process tree")
        elif kind in ("sched_waking", "sched_wakeup", "sched_wakeup_new"):
            s = getattr(ev, kind)
            check(0 <= s.target_cpu < nr_cpus, f"{kind} target_cpu {s.target_cpu} out of range")
            check(threads.get(s.pid, (None,))[0] == s.comm, f"{kind}: pid {s.pid} ({s.comm!r}) not named in the process tree")
            pids.add(s.pid)
        elif kind == "sched_migrate_task":
            s = ev.sched_migrate_task
            check(s.orig_cpu != s.dest_cpu and max(s.orig_cpu, s.dest_cpu) < nr_cpus,
                  f"sched_migrate_task {s.orig_cpu} -> {s.dest_cpu}")
    check(counts["sched_switch"] > 0 and counts["sched_waking"] > 0, f"no sched_switch or sched_waking events: {dict(counts)}")

    # The machine's kernel threads (noise: comm kthread/N) are traced but kept
    # out of the workload's figures; the JSON counts them under machine.noise.
    noise = run.get("machine", {}).get("noise", {})
    kthreads = sum(1 for v in threads.values() if str(v[0]).startswith("kthread/"))
    k_switches = noise.get("kthread_switches", 0)
    k_wakeups = noise.get("kthread_wakeups", 0) - kthreads
    task_switches = sum(1 for _, ev in events if ev.WhichOneof("event") == "sched_switch" and ev.sched_switch.prev_pid != 0)
    cs = run["context_switches"]
    check(task_switches == cs["voluntary"] + cs["involuntary"] + k_switches,
          f"{task_switches} sched_switch from a task, run summary says {cs['voluntary']} + {cs['involuntary']} (+ {k_switches} of kernel threads)")
    check(counts["sched_waking"] == run["wakeups"] + k_wakeups,
          f"{counts['sched_waking']} sched_waking, run says {run['wakeups']} wakeups (+ {k_wakeups} of kernel threads)")
    k_migrations = noise.get("kthread_migrations", 0)
    check(counts["sched_migrate_task"] == run["migrations"] + k_migrations,
          f"{counts['sched_migrate_task']} sched_migrate_task, run says {run['migrations']} migrations (+ {k_migrations} of kernel threads)")
    check(counts["sched_wakeup_new"] == run["tasks"]["created"] + kthreads,
          f"{counts['sched_wakeup_new']} sched_wakeup_new, run created {run['tasks']['created']} tasks (+ {kthreads} kernel threads)")
    check(counts["sched_process_exit"] == run["tasks"]["exited"],
          f"{counts['sched_process_exit']} sched_process_exit, run exited {run['tasks']['exited']} tasks")

    proto_c = sorted(canon_proto(cpu, ev) for cpu, ev in events)
    text_c = sorted(canon_text(txt_path))
    if not check(proto_c == text_c, f"the Perfetto and ftrace files differ ({len(proto_c)} vs {len(text_c)} events)"):
        for a, b in zip(proto_c, text_c):
            if a != b:
                failures.append(f"  first difference: proto {a} vs text {b}")
                break

    if failures:
        for f in failures[:20]:
            print("FAIL:", f)
        print(f"{len(failures)} check(s) failed")
        return 1
    states = collections.Counter(STATE_LETTERS.get(ev.sched_switch.prev_state) for _, ev in events
                                 if ev.WhichOneof("event") == "sched_switch")
    print(f"perfetto trace ok: {len(events)} events on {len(last_ts)} CPUs, {len(pids)} tasks named; "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
          + "; prev_state " + " ".join(f"{k}={v}" for k, v in sorted(states.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
