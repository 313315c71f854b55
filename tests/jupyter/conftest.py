"""Fixtures of the Jupyter integration's tests: pytest-jupyter's (a real Jupyter Server in
the test's event loop, with nb2cwl's server extension enabled) and small notebooks.

pytest-jupyter's fixtures are imported here rather than loaded as a plugin, so that its
autouse fixtures (a fresh event loop per test) apply to these tests only.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_jupyter.jupyter_core import *  # noqa: F403
from pytest_jupyter.jupyter_server import *  # noqa: F403


@pytest.fixture
def jp_server_config(tmp_path: Path) -> dict:
    """nb2cwl's server extension on, its run records in the test's folder."""
    return {"ServerApp": {"jpserver_extensions": {"nb2cwl.integrations.server": True}},
            "Nb2CwlServer": {"runs_dir": str(tmp_path / "runs")}}


ROOT = Path(__file__).resolve().parent.parent.parent
INTEGRATIONS = ROOT / "nb2cwl" / "integrations"


@pytest.fixture
def jupyter_paths(tmp_path: Path) -> dict[str, str]:
    """JUPYTER_PATH and JUPYTER_CONFIG_PATH holding what `pip install nb2cwl` puts in the
    environment (the kernelspec, the prebuilt lab extension, the server extension's config),
    taken from the source tree: an editable install (the test environment) gets none of
    them. test_jupyter_install.py checks the real install."""
    data = tmp_path / "jupyter-data"
    (data / "kernels" / "nb2cwl").mkdir(parents=True)
    (data / "kernels" / "nb2cwl" / "kernel.json").write_text(
        (INTEGRATIONS / "ipython" / "kernelspec" / "kernel.json").read_text())
    lab = data / "labextensions" / "nb2cwl-jupyterlab"
    lab.mkdir(parents=True)
    built = INTEGRATIONS / "jupyterlab" / "labextension"
    for item in ("package.json", "static"):
        (lab / item).symlink_to(built / item)
    (lab / "install.json").symlink_to(INTEGRATIONS / "jupyterlab" / "install.json")
    config = tmp_path / "jupyter-config" / "jupyter_server_config.d"
    config.mkdir(parents=True)
    (config / "nb2cwl.json").write_text(
        (INTEGRATIONS / "server" / "jupyter-config" / "nb2cwl.json").read_text())
    return {"JUPYTER_PATH": str(data), "JUPYTER_CONFIG_PATH": str(config.parent)}
