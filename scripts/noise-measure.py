#!/usr/bin/env python3
"""Summarise a tracefs text trace of a machine's background (scripts/noise-measure):
per CPU, rates of interrupts / softirqs / kernel-thread runs, and their mean and
percentile durations. docs/CALIBRATION.md "Machine noise" holds the figures."""
import re,sys,collections
f=sys.argv[1]
ev=re.compile(r'^\s*(.+?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)$')
cnt=collections.Counter(); dur=collections.defaultdict(list)
start={}; first=None; last=None
running={}  # cpu -> (comm,pid,t)
kthr=collections.Counter(); kdur=collections.defaultdict(list)
def kind(comm):
    for p in ('kworker','ksoftirqd','rcu','migration','kcompactd','khugepaged','kswapd','jbd2','xfs','kthreadd','watchdog','cpuhp','idle_inject','oom_reaper','writeback','kblockd','irq/'):
        if comm.startswith(p): return p
    return None
for line in open(f):
    m=ev.match(line)
    if not m: continue
    comm,pid,cpu,ts,name,rest=m.groups(); ts=float(ts); cpu=int(cpu)
    if first is None: first=ts
    last=ts
    if name.endswith('_entry'):
        key=name if name!='softirq_entry' else 'softirq:'+re.search(r'action=(\w+)',rest).group(1)
        if name=='irq_handler_entry': key='irq:'+re.search(r'name=(\S+)',rest).group(1)
        cnt[(cpu,key)]+=1; start[(cpu,key.split(':')[0] if name!='softirq_entry' else key)]=ts; start[(cpu,'cur')]=(key,ts)
    elif name.endswith('_exit'):
        k,t0=start.get((cpu,'cur'),(None,None))
        if k: dur[k].append(ts-t0)
    elif name=='sched_switch':
        nc=re.search(r'next_comm=(.+?) next_pid=(\d+)',rest)
        r=running.get(cpu)
        if r and kind(r[0]): kdur[kind(r[0])].append(ts-r[2])
        running[cpu]=(nc.group(1),nc.group(2),ts)
        if kind(nc.group(1)): kthr[(cpu,kind(nc.group(1)))]+=1
T=last-first
print(f"span {T:.2f}s")
for (c,k),n in sorted(cnt.items()): print(f"cpu{c} {k:40s} {n/T:8.1f}/s")
for k,v in sorted(dur.items()): v.sort(); print(f"dur {k:40s} n={len(v)} mean={sum(v)/len(v)*1e6:.2f}us p50={v[len(v)//2]*1e6:.2f} p90={v[int(len(v)*.9)]*1e6:.2f}")
for (c,k),n in sorted(kthr.items()): print(f"cpu{c} kthread {k:20s} {n/T:8.1f}/s")
for k,v in sorted(kdur.items()): v.sort(); print(f"kdur {k:20s} n={len(v)} mean={sum(v)/len(v)*1e6:.1f}us p50={v[len(v)//2]*1e6:.1f} p90={v[int(len(v)*.9)]*1e6:.1f} max={v[-1]*1e6:.1f}")
