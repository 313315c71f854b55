"""A real Jupyter server stopped while a run goes on, then started again (issue 27): the run
stops with the server, leaves no process behind, and the new server lists it as ended
(`lost`: nothing told its end), never as running; the next run of the notebook works."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
import urllib.request
from pathlib import Path

import pytest

from in_jupyter.jupyter_helpers import processes_with, start_lab, stop_lab, write_notebook

pytestmark = pytest.mark.streamflow

TOKEN = "nb2cwl-restart-test"
ENDED = ("done", "failed", "cancelled", "lost")


def _call(base: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        f"{base}/nb2cwl/api/{path}", method="POST" if body is not None else "GET",
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def _runs(base: str) -> list[dict]:
    return _call(base, "runs?path=slow.ipynb")["runs"]


def _wait(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_server_restarted_during_a_run_lists_it_ended_and_leaves_nothing(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = tmp_path / "root"
    home.mkdir()
    root.mkdir()
    write_notebook(root, "slow.ipynb", ["print('started', flush=True)",
                                        "import time\ntime.sleep(120)\nprint('slept')"])
    server, base = start_lab(home, root, TOKEN)
    try:
        run = _call(base, "runs", {"path": "slow.ipynb"})
        events = home / "runs" / run["id"] / "events.jsonl"
        # the second cell is running: its step process is there
        _wait(lambda: events.exists() and '"status": "running"' in events.read_text()
              and processes_with(f"{events}.steps"), 120, "the run's step to start")
        assert [r["status"] for r in _runs(base)] == ["running"]
        # the server stops as `jupyter server stop` or a SIGTERM stops it: its own process
        # only, not its process group
        os.kill(server.pid, signal.SIGTERM)
        server.wait(60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            stop_lab(server)
    # nothing of the run is left: no nb2cwl run, no StreamFlow, no step
    left = _wait(lambda: processes_with(f"{events}.steps") == [] or None, 30,
                 "the run's processes to end") and processes_with(f"{events}.steps")
    assert left == [], left
    server, base = start_lab(home, root, TOKEN)
    try:
        listed = _runs(base)
        assert [r["id"] for r in listed] == [run["id"]]
        assert listed[0]["status"] in ENDED and listed[0]["status"] != "done", listed[0]
        # the next run of the notebook starts and is not blocked by the interrupted one
        again = _call(base, "runs", {"path": "slow.ipynb"})
        assert again["id"] != run["id"]
        _call(base, f"runs/{again['id']}/cancel", {})
        finished = _wait(lambda: next((r for r in _runs(base) if r["id"] == again["id"]
                                       and r["status"] in ENDED), None), 60, "the cancel")
        assert finished["status"] == "cancelled", finished
    finally:
        stop_lab(server)
