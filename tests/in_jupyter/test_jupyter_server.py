"""nb2cwl's Jupyter Server extension, in a real Jupyter Server: its endpoints, the run events
on the server's event bus, cancelling, downloads, and runs found again after a restart."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import nbformat
import pytest
from tornado.httpclient import HTTPClientError

from in_jupyter.jupyter_helpers import processes_with, write_notebook
from nb2cwl.integrations.runs import RunStore
from nb2cwl.integrations.server.events import SCHEMA_ID

pytestmark = pytest.mark.streamflow

STEPS = ["import time\nbase = 10", "doubled = base * 2\nprint('doubled', doubled)",
         "tripled = base * 3\nprint('tripled', tripled)", "print(doubled + tripled)"]
TAGS = {0: ["nb2cwl:step=load"], 1: ["nb2cwl:step=double"], 2: ["nb2cwl:step=triple"],
        3: ["nb2cwl:step=report"]}


async def call(jp_fetch: Any, *parts: str, method: str = "GET", body: Any = None,
               **params: str) -> Any:
    response = await jp_fetch("nb2cwl", "api", *parts, method=method, params=params,
                              body=None if body is None else json.dumps(body))
    return json.loads(response.body) if response.body else None


class Events:
    """The run events the server emits, collected."""

    def __init__(self, serverapp: Any) -> None:
        self.seen: list[dict[str, Any]] = []

        async def listener(logger: Any, schema_id: str, data: dict[str, Any]) -> None:
            self.seen.append(dict(data))

        serverapp.event_logger.add_listener(schema_id=SCHEMA_ID, listener=listener)

    def of(self, run: str, **match: Any) -> list[dict[str, Any]]:
        return [e for e in self.seen
                if e["run"] == run and all(e.get(k) == v for k, v in match.items())]

    async def until(self, run: str, timeout: float = 120, **match: Any) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.of(run, **match)
            if found:
                return found[0]
            await asyncio.sleep(0.1)
        raise AssertionError(f"no event {match} of run {run} in {timeout} s: {self.seen[-5:]}")


@pytest.fixture
def events(jp_serverapp: Any) -> Events:
    return Events(jp_serverapp)


def _content(path: Path, edit: dict[int, str] | None = None) -> dict[str, Any]:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    for index, source in (edit or {}).items():
        notebook["cells"][index]["source"] = source
    return notebook


async def test_deployments_are_listed_and_checked(jp_fetch: Any, jp_root_dir: Path) -> None:
    write_notebook(jp_root_dir, "nb.ipynb", ["x = 1"])
    found = await call(jp_fetch, "deployments", path="nb.ipynb")
    by_name = {d["name"]: d for d in found["deployments"]}
    assert found["default"] == "local"
    assert by_name["local"]["available"] is True
    assert set(by_name) >= {"local", "docker", "slurm", "helm"}
    for deployment in by_name.values():  # every one says whether it can run here, and why not
        assert deployment["available"] or deployment["reason"]


async def test_graph_has_steps_edges_cells_and_an_svg(jp_fetch: Any, jp_root_dir: Path) -> None:
    write_notebook(jp_root_dir, "nb.ipynb", STEPS, TAGS)
    graph = await call(jp_fetch, "graph", method="POST", body={"path": "nb.ipynb"})
    steps = {tuple(s["cells"]): s for s in graph["steps"]}
    assert set(steps) == {("cell-0",), ("cell-1",), ("cell-2",), ("cell-3",)}
    report = steps[("cell-3",)]["name"]
    into_report = {e["source"]: e for e in graph["edges"] if e["target"] == report}
    assert sorted(v for e in into_report.values() for v in e["values"]) == ["doubled", "tripled"]
    assert f'data-step="{report}"' in graph["svg"]
    assert graph["cells"]["cell-3"]["step"] == report


async def test_a_bad_notebook_is_a_one_line_error(jp_fetch: Any, jp_root_dir: Path) -> None:
    write_notebook(jp_root_dir, "bad.ipynb", ["x = 1", "y = (2"])
    with pytest.raises(HTTPClientError) as raised:
        await call(jp_fetch, "graph", method="POST", body={"path": "bad.ipynb"})
    assert raised.value.code == 400
    message = json.loads(raised.value.response.body)["message"]
    assert "bad.ipynb, cell 1" in message and "\n" not in message


async def wait_run(jp_fetch: Any, run: str, timeout: float = 180) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = await call(jp_fetch, "runs", run)
        if found["status"] != "running":
            return found
        await asyncio.sleep(0.2)
    raise AssertionError(f"run {run} still going after {timeout} s")


async def test_a_run_streams_every_step_and_output_then_reruns_only_what_changed(
        jp_fetch: Any, jp_root_dir: Path, events: Events) -> None:
    path = write_notebook(jp_root_dir, "nb.ipynb", STEPS, TAGS)
    plan = await call(jp_fetch, "plan", method="POST", body={"path": "nb.ipynb"})
    assert plan["last_run"] is None and plan["rerun_count"] == 4
    run = await call(jp_fetch, "runs", method="POST", body={
        "path": "nb.ipynb", "content": _content(path), "mode": "all"})
    finished = await wait_run(jp_fetch, run["id"])
    assert finished["status"] == "done", finished
    await events.until(run["id"], kind="run", status="done")
    steps = [e["step"] for e in events.of(run["id"], kind="step", status="queued")]
    assert len(steps) == 5  # four cells' steps and the assembler
    for step in steps[:-1]:  # each went queued -> running (where) -> done, in that order
        statuses = [e["status"] for e in events.of(run["id"], kind="step", step=step)]
        assert statuses == ["queued", "running", "done"], (step, statuses)
        assert events.of(run["id"], kind="step", step=step, status="running")[0]["where"]
    outputs = events.of(run["id"], kind="output", cell="cell-1")
    assert "".join(o["output"].get("text", "") for o in outputs) == "doubled 20\n"
    assert events.of(run["id"], kind="cell", cell="cell-3", status="done")

    plan = await call(jp_fetch, "plan", method="POST", body={"path": "nb.ipynb",
                                                            "content": _content(path)})
    assert plan["stale_cells"] == [] and plan["rerun_count"] == 0  # nothing changed since

    # an edit: the edited cell and the cell after it are stale; Run changed reruns those
    edited = _content(path, {2: "tripled = base * 4\nprint('tripled', tripled)"})
    plan = await call(jp_fetch, "plan", method="POST", body={"path": "nb.ipynb",
                                                            "content": edited})
    assert plan["last_run"] == run["id"]
    assert plan["stale_cells"] == ["cell-2", "cell-3"]
    assert plan["rerun_count"] == 2
    # the reason names the cell as Jupyter numbers it (code cell 3 shows In [3])
    assert [s["reason"] for s in plan["steps"] if s["cells"] == ["cell-2"]] == ["In [3] changed"]
    again = await call(jp_fetch, "runs", method="POST", body={
        "path": "nb.ipynb", "content": edited, "mode": "changed"})
    assert (await wait_run(jp_fetch, again["id"]))["status"] == "done"
    await events.until(again["id"], kind="run", status="done")
    ended = {e["step"]: e["status"] for e in events.of(again["id"], kind="step")
             if e["status"] in ("done", "cached")}
    by_cell = {tuple(s["cells"]): s["name"] for s in
               (await call(jp_fetch, "graph", method="POST",
                           body={"path": "nb.ipynb", "content": edited}))["steps"]}
    assert ended[by_cell[("cell-0",)]] == "cached"
    assert ended[by_cell[("cell-1",)]] == "cached"
    assert ended[by_cell[("cell-2",)]] == "done"
    assert ended[by_cell[("cell-3",)]] == "done"
    # the reused cells' outputs arrive too, and the new values reach the executed notebook
    assert events.of(again["id"], kind="output", cell="cell-1")
    executed = await jp_fetch("nb2cwl", "api", "runs", again["id"], "files", "notebook")
    cells = json.loads(executed.body)["cells"]
    assert "".join(cells[3]["outputs"][0]["text"]) == "60\n"
    # the notebook file itself was never written
    assert nbformat.read(str(path), 4).cells[2].source == STEPS[2]


async def test_the_downloads_are_valid(jp_fetch: Any, jp_root_dir: Path, tmp_path: Path) -> None:
    write_notebook(jp_root_dir, "nb.ipynb", STEPS[:2])
    run = await call(jp_fetch, "runs", method="POST", body={"path": "nb.ipynb"})
    assert (await wait_run(jp_fetch, run["id"]))["status"] == "done"
    files = {}
    for kind in ("cwl", "crate", "notebook", "logs"):
        start = time.monotonic()
        response = await jp_fetch("nb2cwl", "api", "runs", run["id"], "files", kind,
                                  request_timeout=300)  # the crate: an export with provenance
        print(kind, f"{time.monotonic() - start:.1f} s")
        assert "attachment" in response.headers["Content-Disposition"]
        files[kind] = tmp_path / f"download.{kind}"
        files[kind].write_bytes(response.body)
    assert response.headers["Content-Type"].startswith("text/plain")
    cwltool = Path(sys.executable).parent / "cwltool"
    checked = subprocess.run([str(cwltool), "--debug", "--validate", str(files["cwl"])],
                             capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
    bundle = tmp_path / "bundle"
    with zipfile.ZipFile(files["crate"]) as archive:
        archive.extractall(bundle)
    verified = subprocess.run([sys.executable, "-m", "nb2cwl", "verify", str(bundle)],
                              capture_output=True, text=True, check=False)
    assert verified.returncode == 0, verified.stderr
    nbformat.validate(nbformat.reads(files["notebook"].read_text(), 4))
    assert "doubled" in files["notebook"].read_text()


async def test_cancel_stops_a_sleeping_step_and_leaves_no_process(
        jp_fetch: Any, jp_root_dir: Path, events: Events, tmp_path: Path) -> None:
    write_notebook(jp_root_dir, "slow.ipynb", ["print('starting')", "import time\n"
                                               "time.sleep(120)\nprint('never')"],
                   {0: ["nb2cwl:step=a"], 1: ["nb2cwl:step=b"]})
    run = await call(jp_fetch, "runs", method="POST", body={"path": "slow.ipynb"})
    await events.until(run["id"], kind="cell", cell="cell-1", status="running")
    marker = f"{tmp_path / 'runs' / run['id'] / 'events.jsonl'}.steps"
    assert processes_with(marker)  # the sleeping step is there
    cancelled = await call(jp_fetch, "runs", run["id"], "cancel", method="POST", body={})
    assert cancelled["id"] == run["id"]
    assert (await wait_run(jp_fetch, run["id"], timeout=60))["status"] == "cancelled"
    await events.until(run["id"], kind="run", status="cancelled")
    deadline = time.monotonic() + 10
    while processes_with(marker) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert processes_with(marker) == []


async def test_a_failing_cell_fails_the_run_and_skips_what_follows(
        jp_fetch: Any, jp_root_dir: Path, events: Events) -> None:
    write_notebook(jp_root_dir, "fail.ipynb", ["x = 1", "y = x / 0", "print(y)"],
                   {0: ["nb2cwl:step=a"], 1: ["nb2cwl:step=b"], 2: ["nb2cwl:step=c"]})
    run = await call(jp_fetch, "runs", method="POST", body={"path": "fail.ipynb"})
    finished = await wait_run(jp_fetch, run["id"])
    assert finished["status"] == "failed"
    assert "cell 1" in finished["error"] and "ZeroDivisionError" in finished["error"]
    await events.until(run["id"], kind="run", status="failed")
    assert events.of(run["id"], kind="cell", cell="cell-1", status="failed")
    error = [e["output"] for e in events.of(run["id"], kind="output", cell="cell-1")]
    assert error[-1]["output_type"] == "error"
    assert events.of(run["id"], kind="cell", cell="cell-2", status="skipped")
    assert events.of(run["id"], kind="step", status="skipped")


async def test_selected_cells_run_with_what_they_need_only(
        jp_fetch: Any, jp_root_dir: Path) -> None:
    write_notebook(jp_root_dir, "nb.ipynb", ["a = 2", "print('unrelated')", "b = a + 1",
                                             "print(b)"])
    run = await call(jp_fetch, "runs", method="POST", body={
        "path": "nb.ipynb", "mode": "selected", "cells": ["cell-3"]})
    assert (await wait_run(jp_fetch, run["id"]))["status"] == "done"
    executed = await jp_fetch("nb2cwl", "api", "runs", run["id"], "files", "notebook")
    cells = json.loads(executed.body)["cells"]
    assert cells[1]["outputs"] == []  # not needed: not run
    assert "".join(cells[3]["outputs"][0]["text"]) == "3\n"


async def test_a_second_run_of_the_same_notebook_waits_for_the_first(
        jp_fetch: Any, jp_root_dir: Path, events: Events) -> None:
    write_notebook(jp_root_dir, "slow.ipynb", ["import time\ntime.sleep(30)"])
    run = await call(jp_fetch, "runs", method="POST", body={"path": "slow.ipynb"})
    with pytest.raises(HTTPClientError) as raised:
        await call(jp_fetch, "runs", method="POST", body={"path": "slow.ipynb"})
    assert raised.value.code == 409
    await call(jp_fetch, "runs", run["id"], "cancel", method="POST", body={})
    assert (await wait_run(jp_fetch, run["id"], timeout=60))["status"] == "cancelled"


async def test_a_killed_run_never_takes_the_server_down_and_runs_are_found_again(
        jp_fetch: Any, jp_root_dir: Path, events: Events, tmp_path: Path) -> None:
    write_notebook(jp_root_dir, "slow.ipynb", ["import time\ntime.sleep(60)"])
    run = await call(jp_fetch, "runs", method="POST", body={"path": "slow.ipynb"})
    await events.until(run["id"], kind="cell", status="running")
    record = RunStore(str(tmp_path / "runs")).get(run["id"])
    assert record is not None
    os.kill(int(record.meta["pid"]), signal.SIGKILL)  # the nb2cwl run process dies at once
    finished = await wait_run(jp_fetch, run["id"], timeout=60)
    assert finished["status"] in ("failed", "lost")
    await events.until(run["id"], kind="run")  # the relay told the end itself
    listed = await call(jp_fetch, "runs", path="slow.ipynb")  # the server still answers
    assert [r["id"] for r in listed["runs"]] == [run["id"]]
    # a new server (a restart) reads the same records: the run is there, ended
    again = RunStore(str(tmp_path / "runs")).runs()
    assert [r.id for r in again] == [run["id"]] and again[0].status in ("failed", "lost")
    # the engine it had started stopped too (nb2cwl's engine watches its parent)
    marker = f"{tmp_path / 'runs' / run['id'] / 'events.jsonl'}.steps"
    deadline = time.monotonic() + 20
    while processes_with(marker) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    assert processes_with(marker) == []


async def test_runs_start_from_a_standby_that_stops_with_the_server(
        jp_fetch: Any, jp_root_dir: Path, jp_serverapp: Any) -> None:
    """The server keeps an `nb2cwl run` process ready (nb2cwl.standby): a run becomes it, the
    next is made ready after, and stopping the server stops the one waiting."""
    extension = jp_serverapp.web_app.settings["nb2cwl"]
    first = extension.store.standby
    assert first is not None and first.poll() is None
    write_notebook(jp_root_dir, "quick.ipynb", ["x = 6", "print(x * 7)"])
    run = await call(jp_fetch, "runs", method="POST", body={"path": "quick.ipynb"})
    assert (await wait_run(jp_fetch, run["id"]))["status"] == "done"
    record = extension.store.get(run["id"])
    assert record.meta["standby"] is True and record.meta["pid"] == first.pid
    # the run's StreamFlow process, started before the run, wrote its workflow; the relay
    # kept it, packed, once the first step said so
    packed = Path(record.folder) / "workflow.packed.cwl"
    deadline = time.monotonic() + 30
    while not packed.is_file() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert "cwlVersion" in packed.read_text()
    deadline = time.monotonic() + 30
    while extension.store.standby is None and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    waiting = extension.store.standby
    assert waiting is not None and waiting.pid != first.pid
    while len(_children(waiting.pid)) < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    children = _children(waiting.pid)  # its StreamFlow and its step server, waiting too
    assert len(children) == 2
    await extension.stop_extension()
    assert waiting.poll() is not None
    while any(os.path.exists(f"/proc/{pid}") for pid in children) and \
            time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert not any(os.path.exists(f"/proc/{pid}") for pid in children)


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text() if entry.isdigit() else ""
        except OSError:
            continue
        if stat and int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry))
    return found
