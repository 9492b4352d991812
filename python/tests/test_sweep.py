"""Sweeps: local processes, Dask and Ray give the same dataset; an interrupted
sweep resumes computing only what is missing; plots; the example notebook."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

import schedlab
from schedlab import dataset as sw

MATRIX = {"kernel": ["v6.6", "v6.12"], "machine": "laptop-4c8t", "params": {"groups": [1, 2], "loops": 20}}
RUNS = 3  # 2 kernels x 2 points x 3 seeds = 12 runs


def frame(df):
    return df.drop(columns=[]).sort_values("key").reset_index(drop=True)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    path = tmp_path_factory.mktemp("ref")
    df = schedlab.sweep(MATRIX, runs=RUNS, path=str(path), jobs=1, progress=False)
    return df


def test_sweep_is_the_product_and_matches_run(reference):
    df = reference
    assert len(df) == 12 and df.attrs["computed"] == 12 and df["key"].is_unique
    assert {"groups", "loops"} <= set(df.columns) and set(df["groups"]) == {1, 2}
    row = df[(df.kernel == "v6.12") & (df.groups == 2) & (df.seed == 3)].iloc[0]
    r = schedlab.run(machine="laptop-4c8t", kernel="v6.12", params={"loops": 20, "groups": 2}, seed=3)
    assert row["metric"] == r.metric and json.loads(row["result"]) == r.data
    assert pd.isna(row["error"]) and pd.isna(row["truncated"])


def test_local_processes_two_workers(reference, tmp_path):
    df = schedlab.sweep(MATRIX, runs=RUNS, path=str(tmp_path), jobs=2, progress=False)
    pd.testing.assert_frame_equal(frame(df), frame(reference))
    again = schedlab.sweep(MATRIX, runs=RUNS, path=str(tmp_path), jobs=2, progress=False)
    assert again.attrs["computed"] == 0 and again.attrs["stored_before"] == 12


def test_dask_two_workers(reference, tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        df = schedlab.sweep(MATRIX, runs=RUNS, path=str(tmp_path), executor=client, progress=False)
    pd.testing.assert_frame_equal(frame(df), frame(reference))


def test_ray_two_workers(reference, tmp_path):
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        df = schedlab.sweep(MATRIX, runs=RUNS, path=str(tmp_path), executor=ray, progress=False)
    finally:
        ray.shutdown()
    pd.testing.assert_frame_equal(frame(df), frame(reference))


def test_killed_sweep_resumes(reference, tmp_path):
    # A sweep killed (SIGKILL, no cleanup) after 5 stored runs, with a half-written file left behind.
    code = textwrap.dedent(f"""
        import os, signal, schedlab
        n = [0]
        def on_result(row):
            n[0] += 1
            if n[0] == 5:
                open(os.path.join({str(tmp_path)!r}, ".part-x.123.tmp"), "w").write("half")
                os.kill(os.getpid(), signal.SIGKILL)
        schedlab.sweep({MATRIX!r}, runs={RUNS}, path={str(tmp_path)!r}, jobs=1, progress=False, on_result=on_result)
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == -9, p.stderr
    assert len(sw.stored_keys(str(tmp_path))) == 5
    df = schedlab.sweep(MATRIX, runs=RUNS, path=str(tmp_path), jobs=2, progress=False)
    assert df.attrs["stored_before"] == 5 and df.attrs["computed"] == 7
    pd.testing.assert_frame_equal(frame(df), frame(reference))
    assert len(sw.stored_keys(str(tmp_path))) == 12


def test_bad_matrix_fails_before_running(tmp_path):
    with pytest.raises(schedlab.SchedlabError, match="unknown kernel"):
        schedlab.sweep({"kernel": ["v6.12", "v9.9"]}, path=str(tmp_path), progress=False)
    with pytest.raises(schedlab.SchedlabError, match="unknown keys"):
        schedlab.sweep({"kernels": ["v6.12"]}, path=str(tmp_path), progress=False)
    assert sw.stored_keys(str(tmp_path)) == set()


def test_plots(reference):
    import matplotlib

    matplotlib.use("Agg")
    from schedlab import plot

    ax = plot.metric_vs(reference, "groups")
    assert len(ax.get_lines()) == 2
    assert plot.wakeup_shares(reference).get_ylabel().startswith("share")
    assert plot.run_delay(reference).get_yscale() == "log"
    assert plot.wakeup_shares(schedlab.run(params={"groups": 1, "loops": 20})) is not None


def test_example_notebook_runs(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb_path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "sweep.ipynb"
    nb = nbformat.read(nb_path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)
