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

from in_jupyter.jupyter_helpers import jupyter_paths_in


@pytest.fixture
def jp_server_config(tmp_path: Path) -> dict:
    """nb2cwl's server extension on, its run records in the test's folder."""
    return {"ServerApp": {"jpserver_extensions": {"nb2cwl.integrations.server": True}},
            "Nb2CwlServer": {"runs_dir": str(tmp_path / "runs")}}


@pytest.fixture
def jupyter_paths(tmp_path: Path) -> dict[str, str]:
    """See jupyter_helpers.jupyter_paths_in."""
    return jupyter_paths_in(tmp_path)
