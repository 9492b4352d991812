"""Benchmark (not a test): one sweep of 48 runs with 1 worker, then with 2
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
    "params": {"groups": [2, 4, 6, 8], "loops": 100},
}
RUNS = 6  # 2 kernels x 4 points x 6 seeds = 48 runs


def main():
    jobs = [int(j) for j in sys.argv[1:]] or [1, 2]
    times = {}
    frames = {}
    for j in jobs:
        with tempfile.TemporaryDirectory() as d:
            load0 = os.getloadavg()[0]
            t = time.perf_counter()
            df = schedlab.sweep(MATRIX, runs=RUNS, path=d, jobs=j, progress=False)
            times[j] = time.perf_counter() - t
            frames[j] = df.sort_values("key")["metric"].tolist()
            print(f"jobs={j}: {len(df)} runs in {times[j]:.2f} s "
                  f"(load average {load0:.2f} before, {os.getloadavg()[0]:.2f} after)", flush=True)
    assert all(f == frames[jobs[0]] for f in frames.values()), "results differ between worker counts"
    if 1 in times:
        for j in jobs:
            if j != 1:
                print(f"speedup with {j} workers: {times[1] / times[j]:.2f}x")


if __name__ == "__main__":
    main()
