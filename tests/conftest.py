"""Shared fixtures: the project's notebooks, and a PATH on which steps find this Python."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

# real engines for the deployment tests (skipped with the reason when they cannot start here;
# failing instead when CI=true)
from engines.browser import chromium  # noqa: F401
from engines.docker import docker_engine  # noqa: F401
from engines.slurm import slurm_cluster  # noqa: F401
from engines.slurm_two_nodes import slurm_two_nodes  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


def default_stop_signals() -> None:
    """In a child the tests signal: SIGHUP and SIGINT as a terminal gives them. A suite started
    under nohup (SIGHUP ignored) or as a background job (SIGINT ignored) would otherwise hand
    the ignored signal down, and nb2cwl rightly keeps an ignored signal ignored."""
    for signum in (signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, signal.SIG_DFL)


def pytest_configure(config: pytest.Config) -> None:
    for marker in ("slurm: runs steps as jobs of a real Slurm cluster started on this machine",
                   "docker: runs steps in containers of a real Docker engine started here",
                   "helm: renders, lints and validates the Helm chart offline",
                   "browser: drives JupyterLab and Notebook 7 in a real browser (chromium)"):
        config.addinivalue_line("markers", marker)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """With pytest-xdist (scripts/test.sh runs -n 2 --dist loadgroup): every test of a real
    engine on one worker, so that the Slurm cluster and the Docker engine start once; the
    fidelity tests of one notebook on one worker, where one kernel run serves them all."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & {"slurm_cluster", "slurm_two_nodes", "docker_engine"}:
            item.add_marker(pytest.mark.xdist_group("engines"))
        elif item.module is not None and item.module.__name__ == "test_fidelity":
            case = getattr(item, "callspec", None)
            name = case.params.get("case") if case is not None else None
            item.add_marker(pytest.mark.xdist_group(f"fidelity-{getattr(name, 'file', name)}"))


@pytest.fixture(autouse=True)
def _python_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path_factory) -> None:
    """Steps run `python3` from PATH: make it the interpreter running the tests. And the
    costs of deployments are the profiles' figures, not what `nb2cwl calibrate` measured on
    this machine before (tests that calibrate write to their own file)."""
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep
                       + os.environ.get("PATH", ""))
    monkeypatch.setenv("NB2CWL_CALIBRATION",
                       str(tmp_path_factory.getbasetemp() / "no-calibration.json"))
