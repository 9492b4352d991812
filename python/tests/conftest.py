import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def cli():
    """The `schedlab` binary of this checkout (SCHEDLAB_BIN, else target/release/schedlab)."""
    b = os.environ.get("SCHEDLAB_BIN") or str(ROOT / "target" / "release" / "schedlab")
    if not os.access(b, os.X_OK):
        pytest.fail(f"no schedlab binary at {b}: build it (cargo build --release -p schedlab-cli) or set SCHEDLAB_BIN")

    def run(*args, check=True):
        p = subprocess.run([b, *args], capture_output=True, text=True)
        if check and p.returncode != 0:
            raise AssertionError(f"schedlab {' '.join(args)} failed: {p.stderr}")
        return p

    return run
