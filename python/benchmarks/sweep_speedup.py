"""Benchmark (not a test; issue #19 asks for >= 1.7x with 2 workers on a 40-run
sweep): one sweep of 40 runs with 1 worker, then with 2
worker processes, each into a fresh dataset; prints wall times, the speedup
and the load average (the machine may be shared). Usage:
    python python/benchmarks/sweep_speedup.py [JOBS...]   (default: 1 2)
"""

import os
import sys
import tempfile
import time

import schedlab

MATRIX = {
    "machine": "x86-12",
    "kernel": ["v6.6", "v6.12"],
    "workload": "hackbench",
    "params": {"groups": [2, 4, 6, 8], "loops": 400},
}
RUNS = 5  # 2 kernels x 4 points x 5 seeds = 40 runs


def cpu_seconds():
    import resource

    u = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(x.ru_utime + x.ru_stime for x in u)


def main():
    jobs = [int(j) for j in sys.argv[1:]] or [1, 2]
    times = {}
    results = {}
    for j in jobs:
        with tempfile.TemporaryDirectory() as d:
            load0 = os.getloadavg()[0]
            c0, t = cpu_seconds(), time.perf_counter()
            df = schedlab.sweep(MATRIX, runs=RUNS, path=d, jobs=j, progress=False)
            wall, cpu = time.perf_counter() - t, cpu_seconds() - c0
            times.setdefault(j, []).append(wall)
            results[j] = df.sort_values("key")["metric"].tolist()
            print(f"jobs={j}: {len(df)} runs in {wall:.2f} s wall, {cpu:.2f} s CPU ({cpu / wall:.2f} CPUs busy); "
                  f"load average {load0:.2f} before, {os.getloadavg()[0]:.2f} after", flush=True)
    assert all(r == results[jobs[0]] for r in results.values()), "results differ between worker counts"
    if 1 in times:
        best1 = min(times[1])
        for j in sorted(times):
            if j != 1:
                print(f"speedup with {j} workers (best wall times): {best1 / min(times[j]):.2f}x")


if __name__ == "__main__":
    main()
