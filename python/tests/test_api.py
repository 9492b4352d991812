"""The Python API against the CLI: same results, same statistics, same errors."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import tomllib

import pytest

import schedlab

SMALL = {"groups": 1, "loops": 20}


def test_tables():
    m = schedlab.machines()
    assert {"x86-12", "laptop-4c8t"} <= set(m["name"])
    assert int(m.set_index("name").loc["x86-12", "cpus"]) == 12
    k = schedlab.kernels()
    assert "v6.12" in set(k[k["kind"] == "profile"]["name"])
    w = schedlab.workloads().set_index("name")
    assert w.loc["hackbench", "params"]["groups"] == "10"


def test_run_is_the_cli_run(cli):
    r = schedlab.run(machine="laptop-4c8t", kernel="v6.6", workload="hackbench", params=SMALL, seed=3)
    out = cli("run", "--json", "--machine", "laptop-4c8t", "--kernel", "v6.6", "--set", "groups=1,loops=20", "--seed", "3")
    assert r.data == json.loads(out.stdout)
    assert r.metric == r.data["metric"]["value"] > 0
    assert list(r.cpus["cpu"]) == list(range(8))
    assert list(r.levels["level"]) == [lv["level"] for lv in r.data["schedstat"]["levels"]]
    c = r.counters.set_index("counter")["value"]
    assert c["migrations"] == r.data["migrations"]
    # hackbench's receivers block on empty sockets: the channel waits are counters too.
    assert c["channel_reads"] == r.data["channel_waits"]["reads"] > 0
    assert c["channel_pipe_rewaits"] == 0
    again = schedlab.run(machine="laptop-4c8t", kernel="v6.6", workload="hackbench", params=SMALL, seed=3)
    assert again.json == r.json


def test_defaults_are_the_cli_defaults(cli):
    r = schedlab.run(params=SMALL)
    assert r.data == json.loads(cli("run", "--json", "--set", "groups=1,loops=20").stdout)


@pytest.mark.parametrize("kwargs,args", [
    ({"kernel": "v9.9"}, ["--kernel", "v9.9"]),
    ({"machine": "nosuch"}, ["--machine", "nosuch"]),
    ({"params": {"nosuch": 1}}, ["--set", "nosuch=1"]),
    ({"duration": "2"}, ["--duration", "2"]),
    ({"patch": "nosuch"}, ["--patch", "nosuch"]),
])
def test_errors_are_the_cli_errors(cli, kwargs, args):
    with pytest.raises(schedlab.SchedlabError) as e:
        schedlab.run(**kwargs)
    p = cli("run", *args, check=False)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines()[-1] == f"schedlab: error: {e.value}"
    assert isinstance(e.value, ValueError)


def test_machine_and_workload_from_dicts(cli, tmp_path):
    mach = tomllib.loads(cli("machine", "show", "laptop-4c8t", "--toml").stdout)
    wl = tomllib.loads(cli("workload", "export", "pipe", "--set", "loops=300", "--machine", "laptop-4c8t").stdout)
    r = schedlab.run(machine=mach, workload=wl, seed=2)
    ref = schedlab.run(machine="laptop-4c8t", workload="pipe", params={"loops": 300}, seed=2)
    assert r.metric == ref.metric and r.data["cpus"] == ref.data["cpus"]
    f = schedlab.workload_file(wl, directory=str(tmp_path))
    assert schedlab.run(machine="laptop-4c8t", workload=f, seed=2).metric == ref.metric
    bad = dict(mach, topology=dict(mach["topology"], cores_per_llc=0))
    with pytest.raises(schedlab.SchedlabError):
        schedlab.run(machine=bad)


def test_compare_is_the_cli_compare_json(cli, tmp_path):
    # One serialisation: schedlab.compare parses the document `schedlab compare --json` writes.
    c = schedlab.compare(kernel="v6.6", vs="v6.12", params={"groups": [1, 2], "loops": 20}, runs=3)
    out = tmp_path / "c.json"
    cli("compare", "--kernel", "v6.6", "--vs", "v6.12", "--set", "groups=1,2,loops=20", "--runs", "3", "--json", str(out))
    ref = json.loads(out.read_text())
    assert c.data == ref
    assert json.loads(c.json) == ref
    rows = ref["tables"][0]["rows"]
    s = c.summary
    assert list(s["point"]) == [r["label"] for r in rows] == ["groups-1", "groups-2"]
    for (_, row), r in zip(s.iterrows(), rows):
        for k, rk in (("a_mean", "a_mean"), ("b_mean", "b_mean"), ("a_cv_pct", "a_cv"), ("change_pct", "change_pct"),
                      ("migrations_a", "migrations_a")):
            assert row[k] == r[rk], k
        assert row["p_value"] == r["welch"]["p"] and row["significant"] == r["significant"]
    recs = ref["tables"][0]["recs"]
    runs = c.runs
    assert len(runs) == len(recs) == 12
    assert list(runs["metric"]) == [r["metric"] for r in recs]
    assert list(runs["side"]) == list("AAABBBAAABBB") and list(runs["seed"]) == [1, 2, 3] * 4
    assert list(runs["llc_misses"]) == [r["counters"]["llc_misses"] for r in recs]
    assert list(runs["run_delay_p99_ns"]) == [r["run_delay_ns"]["p99"] for r in recs]
    # Per-level counters: one row per run and level, the engine's LevelStats fields.
    lv = c.levels
    assert len(lv) == sum(len(r["levels"]) for r in recs) > 0
    first = lv[(lv["side"] == "B") & (lv["seed"] == 2) & (lv["point"] == "groups-2")]
    assert list(first["level"]) == [x["level"] for x in recs[10]["levels"]]
    assert list(first["lb_count"]) == [x["lb_count"] for x in recs[10]["levels"]]
    assert (lv.groupby(["point", "side", "seed"], sort=False)["ttwu_move_affine"].sum().tolist()
            == [r["ttwu_move_affine"] for r in recs])
    assert set(lv.columns) >= {"depth", "level", "ttwu_wake_remote", "lb_balanced", "lb_failed", "lb_gained",
                               "alb_pushed", "wake_remote_share"}


def test_polars():
    pl = pytest.importorskip("polars")
    r = schedlab.run(params=SMALL)
    assert isinstance(r.to_polars("cpus"), pl.DataFrame)
    assert r.to_polars("levels").height == len(r.levels)


def test_gil_is_released_while_simulating():
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=count)
    t.start()
    t0 = time.time()
    # (Long enough to tell on a fast engine: 200,000 round trips took 0.18 s
    # once the engine got faster, under the 0.2 s this test needs.)
    schedlab.run(workload="pipe", params={"loops": 1000000})
    took = time.time() - t0
    stop.set()
    t.join()
    # A held GIL would freeze the counter for the whole run.
    assert took > 0.2, "the run is too short to tell"
    assert len(ticks) > took * 100


def test_ctrl_c_interrupts_a_run():
    code = textwrap.dedent("""
        import sys, schedlab
        print("start", flush=True)
        try:
            schedlab.run(workload="pipe", params={"loops": 100000000})
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(7)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "start"
    time.sleep(1.0)
    t0 = time.time()
    p.send_signal(signal.SIGINT)
    try:
        rc = p.wait(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
    assert rc == 7 and p.stdout.read().strip() == "interrupted"
    assert time.time() - t0 < 5
