"""Sweeps: the cartesian product machines x kernels (x patches) x workloads x
parameter values x seeds (crates/lab/src/sweep.rs expands it), run on local
processes, a Dask cluster or Ray, streamed into a Parquet dataset with one
file per run, named by the hash of the run's full specification.

Resuming is the normal case: a run whose file exists is not run again, a
file appears only complete (written aside, then renamed), and a run has one
file name, so nothing is duplicated. Kill a sweep at any point and start it
again: it computes only what is missing.
"""

from __future__ import annotations

import hashlib
import json
import os

from . import _schedlab
from ._spec import sweep_spec

#: Columns of every run file (one row each); `result` is the full RunReport JSON.
COLUMNS = [
    ("key", "string"), ("spec", "string"), ("schedlab_version", "string"),
    ("machine", "string"), ("kernel", "string"), ("patch", "string"), ("features", "string"),
    ("workload", "string"), ("params", "string"), ("seed", "int64"), ("duration", "string"),
    ("machine_model", "string"), ("metric_name", "string"), ("metric", "float64"), ("unit", "string"),
    ("higher_is_better", "bool"), ("truncated", "string"), ("error", "string"),
    ("simulated_ns", "int64"), ("voluntary_switches", "int64"), ("involuntary_switches", "int64"),
    ("migrations", "int64"), ("wakeups", "int64"), ("ttwu_count", "int64"), ("ttwu_local", "int64"),
    ("ttwu_move_affine", "int64"),
    ("run_delay_p50_ns", "int64"), ("run_delay_p90_ns", "int64"), ("run_delay_p99_ns", "int64"),
    ("run_delay_max_ns", "int64"), ("l2_misses", "int64"), ("llc_misses", "int64"), ("dram_bytes", "int64"),
    ("remote_bytes", "int64"), ("rq_lock_wait_ns", "int64"), ("idle_exit_ns", "int64"), ("mm_switches", "int64"),
    ("group_switches", "int64"), ("events", "int64"), ("levels", "string"), ("result", "string"),
]


def spec_key(spec_json):
    """The dataset key of a run: sha256 of its canonical ScenarioSpec JSON (first 24 hex digits)."""
    return hashlib.sha256(spec_json.encode()).hexdigest()[:24]


def run_row(spec_json):
    """Run one point (a canonical ScenarioSpec JSON) and return its dataset row.
    Runs in the workers: needs only the native module."""
    spec = json.loads(spec_json)
    row = {c: None for c, _ in COLUMNS}
    row.update(key=spec_key(spec_json), spec=spec_json, schedlab_version=_schedlab.__version__,
               machine=spec["machine"], kernel=spec["kernel"], patch=spec["patch"], features=spec["features"],
               workload=spec["workload"], params=json.dumps(dict(spec["params"]), sort_keys=True),
               seed=spec["seed"], duration=spec["duration"], machine_model=spec["machine_model"])
    try:
        text = _schedlab.run(spec_json)
    except _schedlab.SchedlabError as e:
        row["error"] = str(e)
        return row
    d = json.loads(text)
    m = d["metric"]
    row.update(metric_name=m["name"], metric=None if d.get("truncated") else m["value"], unit=m["unit"],
               higher_is_better=m["higher_is_better"], truncated=d.get("truncated"),
               simulated_ns=d["simulated_ns"], voluntary_switches=d["context_switches"]["voluntary"],
               involuntary_switches=d["context_switches"]["involuntary"], migrations=d["migrations"],
               wakeups=d["wakeups"], ttwu_count=d["schedstat"]["ttwu_count"],
               ttwu_local=d["schedstat"]["ttwu_local"],
               ttwu_move_affine=sum(lv["ttwu_move_affine"] for lv in d["schedstat"]["levels"]),
               group_switches=d["group_switches"], events=d["events"],
               levels=json.dumps(d["schedstat"]["levels"]), result=text)
    for k, v in d["run_delay_ns"].items():
        row[f"run_delay_{k}_ns"] = v
    for k, v in d["machine"].items():
        if k != "name":
            row[k] = v
    return row


def _schema():
    import pyarrow as pa

    return pa.schema([(c, getattr(pa, t)() if t != "bool" else pa.bool_()) for c, t in COLUMNS])


def _file(path, key):
    return os.path.join(path, f"part-{key}.parquet")


def _write(path, row):
    """Write one run's file atomically: aside (a hidden name the dataset ignores), then rename."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    final = _file(path, row["key"])
    tmp = os.path.join(path, f".part-{row['key']}.{os.getpid()}.tmp")
    pq.write_table(pa.Table.from_pylist([row], schema=_schema()), tmp)
    os.replace(tmp, final)


def stored_keys(path):
    """Keys of the runs stored in the dataset at `path`."""
    if not os.path.isdir(path):
        return set()
    return {f[len("part-"):-len(".parquet")] for f in os.listdir(path)
            if f.startswith("part-") and f.endswith(".parquet")}


def load(path, keys=None):
    """The dataset at `path` (or only `keys`, in that order) as a pandas DataFrame,
    with one column per workload parameter (strings as given; numbers when all are)."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    keys = sorted(stored_keys(path)) if keys is None else list(keys)
    tables = [pq.read_table(_file(path, k), schema=_schema()) for k in keys]
    df = pa.concat_tables(tables).to_pandas() if tables else _schema().empty_table().to_pandas()
    params = [json.loads(p) for p in df["params"]]
    names = sorted({k for p in params for k in p})
    for k in names:
        col = k if k not in df.columns else f"param_{k}"
        vals = pd.Series([p.get(k) for p in params], index=df.index, dtype=object)
        try:
            vals = pd.to_numeric(vals)
        except (ValueError, TypeError):
            pass
        df[col] = vals
    return df


def _executor_kind(executor):
    if executor is None or executor == "local":
        return "local"
    if executor == "ray" or getattr(executor, "__name__", None) == "ray":
        return "ray"
    if type(executor).__name__ == "Client" and type(executor).__module__.startswith("distributed"):
        return "dask"
    if hasattr(executor, "submit"):
        return "futures"
    raise ValueError(f"unknown executor {executor!r}: use 'local', a distributed.Client, 'ray' (or the ray module), "
                     "or a concurrent.futures.Executor")


def _results(kind, executor, todo, jobs):
    """Yields rows as they complete, on the chosen executor."""
    if kind == "local" and (jobs or os.cpu_count() or 1) == 1:
        for s in todo:
            yield run_row(s)
        return
    if kind in ("local", "futures"):
        import concurrent.futures as cf

        if kind == "local":
            import multiprocessing as mp

            pool = cf.ProcessPoolExecutor(max_workers=jobs or os.cpu_count(), mp_context=mp.get_context("spawn"))
        else:
            pool = executor
        try:
            futs = [pool.submit(run_row, s) for s in todo]
            for f in cf.as_completed(futs):
                yield f.result()
        finally:
            if kind == "local":
                pool.shutdown(wait=True, cancel_futures=True)
        return
    if kind == "dask":
        from distributed import as_completed

        futs = [executor.submit(run_row, s, pure=False) for s in todo]
        try:
            for f in as_completed(futs):
                yield f.result()
        finally:
            for f in futs:
                f.cancel()
        return
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=jobs, include_dashboard=False)
    remote = ray.remote(run_row)
    pending = [remote.remote(s) for s in todo]
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield ray.get(ref)
    finally:
        for ref in pending:
            ray.cancel(ref)


def sweep(matrix, runs=None, executor="local", path="schedlab-sweep", jobs=None, progress=True, on_result=None):
    """Run the cartesian product of `matrix` into the Parquet dataset at `path`.

    matrix: {"machine": ..., "kernel": ..., "patch": ..., "workload": ..., "seed": ...
    (each a value or a list), "params": {key: value or list}, and fixed "duration",
    "features", "machine_model"}; runs: seeds 1..runs when "seed" is not given.
    executor: "local" (processes; `jobs` of them, default all cores), a
    `distributed.Client`, "ray" (or the ray module; ray.init(num_cpus=jobs) if not
    initialised), or any concurrent.futures.Executor. Runs already stored are not
    run again. `on_result(row)` is called after each run is stored.

    Returns the sweep's runs as a DataFrame in the matrix's order (`load`), with
    `attrs["computed"]` and `attrs["stored_before"]` counting what this call ran and found.
    """
    spec_json = json.dumps(sweep_spec(matrix, runs))
    points = _schedlab.sweep_points(spec_json)
    keys = [spec_key(p) for p in points]
    if len(set(keys)) != len(keys):
        raise _schedlab.SchedlabError("the sweep matrix lists a point twice (a value repeated in one of its lists)")
    # Bad input fails here, before anything runs (each distinct scenario is checked once).
    checked = set()
    for p in points:
        s = json.loads(p)
        s["seed"] = 1
        c = json.dumps(s)
        if c not in checked:
            checked.add(c)
            _schedlab.check(c)
    os.makedirs(path, exist_ok=True)
    stored = stored_keys(path)
    todo = [p for p, k in zip(points, keys) if k not in stored]
    before = len(points) - len(todo)
    kind = _executor_kind(executor)
    from tqdm.auto import tqdm

    bar = tqdm(total=len(points), initial=before, desc="schedlab sweep", unit="run", disable=not progress)
    computed = 0
    try:
        for row in _results(kind, executor, todo, jobs):
            _write(path, row)
            computed += 1
            bar.update(1)
            if on_result is not None:
                on_result(row)
    finally:
        bar.close()
    df = load(path, keys)
    df.attrs["computed"] = computed
    df.attrs["stored_before"] = before
    return df
