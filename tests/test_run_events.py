"""`nb2cwl run --events` (a run's progress as JSON lines), `--content` (unsaved edits),
`--cells` (some cells and what they need), `--refresh` and `--keep-values`, and nb2cwl's own
magics in a compiled notebook."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from nb2cwl.cli import main
from nb2cwl.frontend.magics import own_magics
from nb2cwl.run_events import _appended

SOURCES = ["import time\nbase = 10\nprint('start')",
           "print('a', flush=True)\ntime.sleep(0.6)\nprint('b')\ndoubled = base * 2\ndoubled",
           "from IPython.display import HTML, display\ndisplay(HTML('<b>x</b>'))\n"
           "print(doubled + 1)"]


def _notebook(folder: Path, sources: list[str], name: str = "nb.ipynb") -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python",
                                       "display_name": "Python 3"}
    notebook.cells = [nbformat.v4.new_code_cell(s, id=f"c{n}") for n, s in enumerate(sources)]
    path = folder / name
    nbformat.write(notebook, str(path))
    return path


def _events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.streamflow
def test_events_tell_every_step_and_each_cells_outputs_as_they_come(tmp_path: Path) -> None:
    notebook = _notebook(tmp_path, SOURCES)
    events_file = tmp_path / "events.jsonl"
    assert main(["run", str(notebook), "-o", str(tmp_path / "wf"), "--granularity", "cell",
                 "--events", str(events_file), "--quiet"]) == 0
    events = _events(events_file)
    assert events[0]["kind"] == "run" and events[0]["status"] == "running"
    assert events[-1]["kind"] == "run" and events[-1]["status"] == "done"
    assert events[-1]["executed_notebook"].endswith("nb.executed.ipynb")
    steps = events[0]["steps"]
    assert steps == ["cell_0", "cell_1", "cell_2", "assemble"]
    for step in steps[:-1]:
        statuses = [e["status"] for e in events if e["kind"] == "step" and e["step"] == step]
        assert statuses == ["queued", "running", "done"], (step, statuses)
    for cell in ("c0", "c1", "c2"):
        statuses = [e["status"] for e in events if e["kind"] == "cell" and e["cell"] == cell]
        assert statuses == ["running", "done"]
    # cell 1's first line came while it slept, well before its "b", as it was printed
    outputs = [e for e in events if e["kind"] == "output" and e["cell"] == "c1"]
    streams = [e for e in outputs if e["output"]["output_type"] == "stream"]
    assert "".join(e["output"]["text"] for e in streams) == "a\nb\n"
    first_b = next(e for e in streams if "b" in e["output"]["text"])
    assert streams[0]["output"]["text"].startswith("a")
    assert streams[0]["time"] < first_b["time"] - 0.4
    assert outputs[-1]["output"]["output_type"] == "execute_result"
    # what the events show is what the executed notebook has
    executed = nbformat.read(events[-1]["executed_notebook"], 4)
    shown = [e["output"] for e in events if e["kind"] == "output" and e["cell"] == "c2"]
    assert shown == [dict(o) for o in executed.cells[2].outputs]
    assert not (tmp_path / "events.jsonl.steps").exists()  # the steps' own files are gone


@pytest.mark.streamflow
def test_a_failing_run_ends_its_events_with_the_error(tmp_path: Path) -> None:
    notebook = _notebook(tmp_path, ["x = 1", "y = x / 0", "print(y)"])
    events_file = tmp_path / "events.jsonl"
    assert main(["run", str(notebook), "-o", str(tmp_path / "wf"), "--granularity", "cell",
                 "--events", str(events_file), "--quiet"]) == 1
    events = _events(events_file)
    assert events[-1]["status"] == "failed" and "ZeroDivisionError" in events[-1]["message"]
    assert any(e["kind"] == "step" and e["status"] == "skipped" for e in events)
    assert [e["status"] for e in events if e.get("cell") == "c2" and e["kind"] == "cell"] == \
        ["skipped"]


def test_a_notebook_that_does_not_compile_ends_its_events_too(tmp_path: Path) -> None:
    notebook = _notebook(tmp_path, ["x = (1"])
    events_file = tmp_path / "events.jsonl"
    assert main(["run", str(notebook), "-o", str(tmp_path / "wf"), "--events",
                 str(events_file)]) == 1
    (event,) = _events(events_file)
    assert event["status"] == "failed" and "cell 0" in event["message"]


@pytest.mark.streamflow
def test_content_cells_refresh_and_kept_values(tmp_path: Path) -> None:
    notebook = _notebook(tmp_path, ["a = 2", "print('unrelated')", "b = a + 1", "print(b)"])
    original = notebook.read_text()
    edited = nbformat.read(str(notebook), 4)
    edited.cells[2].source = "b = a + 40"
    content = tmp_path / "unsaved.ipynb"
    nbformat.write(edited, str(content))
    out = tmp_path / "wf"
    events_file = tmp_path / "events.jsonl"
    assert main(["run", str(notebook), "-o", str(out), "--content", str(content), "--cells",
                 "c3", "--keep-values", "--events", str(events_file), "--quiet",
                 "--granularity", "cell"]) == 0
    assert notebook.read_text() == original  # never written
    executed = nbformat.read(str(out / "runs" / "1" / "nb.executed.ipynb"), 4)
    assert executed.cells[2].source == "b = a + 40"  # the notebook as the editor had it
    assert executed.cells[1].outputs == []  # not needed by cell 3: not run
    assert executed.cells[3].outputs[0]["text"] == "42\n"
    done = [e for e in _events(events_file) if e["kind"] == "step" and e["status"] == "done"
            and e.get("cache")]
    kept = {name for e in done for name in json.loads(
        (out / ".nb2cwl-cache" / e["cache"] / "out" / "values" / "index.json").read_text())}
    assert {"a", "b"} <= kept  # every variable, though no later step reads them
    # the same again: the chosen cell runs again, the cells it needs are reused; with
    # --refresh every step runs again
    for flag, expected in ((None, {"c0": "cached", "c2": "cached", "c3": "done"}),
                           ("--refresh", {"c0": "done", "c2": "done", "c3": "done"})):
        events_file.unlink()
        extra = [flag] if flag else []
        assert main(["run", str(notebook), "-o", str(out), "--content", str(content),
                     "--cells", "c3", "--keep-values", "--events", str(events_file),
                     "--quiet", "--granularity", "cell", *extra]) == 0
        ends = {e["cell"]: e["status"] for e in _events(events_file) if e["kind"] == "cell"
                and e["status"] not in ("queued", "running")}
        assert ends == expected


def test_cells_names_an_unknown_cell(tmp_path: Path, capsys) -> None:
    notebook = _notebook(tmp_path, ["a = 1"])
    assert main(["compile", str(notebook), "-o", str(tmp_path / "wf"), "--cells", "nope"]) == 1
    assert "--cells: no cell 'nope'" in capsys.readouterr().err


def test_own_magics_become_comments_and_a_step_cell_keeps_its_body() -> None:
    source, deployment, turned = own_magics(
        "%%nb2cwl step --deployment slurm\nx = 1\n%nb2cwl run\n%load_ext nb2cwl\n%load_ext foo")
    assert deployment == "slurm" and turned == 3
    assert source.split("\n") == ["# %%nb2cwl step --deployment slurm", "x = 1",
                                  "# %nb2cwl run", "# %load_ext nb2cwl", "%load_ext foo"]
    assert own_magics("print(1)") == ("print(1)", None, 0)


def test_outputs_are_sent_as_what_changed() -> None:
    a = {"output_type": "stream", "name": "stdout", "text": "a"}
    ab = {"output_type": "stream", "name": "stdout", "text": "ab"}
    shown = {"output_type": "display_data", "data": {"text/plain": "1"}, "metadata": {}}
    assert _appended([], [a]) == [a]
    assert _appended([a], [ab, shown]) == [{**ab, "text": "b"}, shown]
    assert _appended([a, shown], [a, shown]) == []
    assert _appended([ab], [a]) is None  # cleared: the whole list again
    assert _appended([shown], [a]) is None


def test_cells_refuses_a_markdown_cell_and_names_why_others_are_left_out(
        tmp_path: Path) -> None:
    """Through the CLI as a user meets it: a markdown cell is refused in one line naming the
    cell; the cells --cells leaves out are said to be left out by it, not by a tag."""
    import subprocess
    import sys

    import nbformat

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("a = 1"), nbformat.v4.new_markdown_cell("# Notes"),
        nbformat.v4.new_code_cell("b = 2"), nbformat.v4.new_code_cell("print(b)")])
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)

    def explain(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "nb2cwl", "explain", str(path), *extra],
                              capture_output=True, text=True, timeout=120)

    refused = explain("--cells", "1")
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        f"nb2cwl: error: nb.ipynb, cell 1 (id {nb.cells[1].id}): --cells 1: cell 1 is a "
        "markdown cell, which does not run; give code cells"]
    chosen = explain("--cells", "3")
    assert chosen.returncode == 0
    assert "cell skipped (not among --cells, and none of them needs it)" in chosen.stdout
    assert "nb2cwl:skip" not in chosen.stderr + chosen.stdout
