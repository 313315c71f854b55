"""The suite's worker groups hold: scripts/test.sh runs `-n 2 --dist loadgroup`, and the engine
tests, each notebook's fidelity tests and the fresh-environment reruns rely on their
`xdist_group` keeping them on one worker (one Slurm cluster, one kernel run, one environment).
A pytest and pytest-xdist pair that ignores the mark passes every test, only slower; this test
is what notices."""

import os
import subprocess
import sys
from pathlib import Path

PROBE = '''
import os
import pytest

@pytest.mark.xdist_group("together")
@pytest.mark.parametrize("n", range(4))
def test_grouped(n):
    with open(os.environ["PROBE_LOG"], "a") as log:
        log.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")

@pytest.mark.parametrize("n", range(8))
def test_free(n):
    pass
'''


def test_an_xdist_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_probe.py").write_text(PROBE)
    log = tmp_path / "workers.txt"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
         "--dist", "loadgroup", "test_probe.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PROBE_LOG": str(log)})
    assert result.returncode == 0, result.stdout[-2000:]
    workers = log.read_text().split()
    assert len(workers) == 4
    assert len(set(workers)) == 1, f"one group ran on {sorted(set(workers))}"
