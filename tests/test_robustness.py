"""Faults at run time: failing cells, crashed steps, reruns; and path confinement.

Stopping a run with a signal (Ctrl-C, SIGTERM, SIGHUP) is tested in test_stopping.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from equivalence import run_with_workflow
from test_cli import notebook

from nb2cwl.cli import main

pytestmark = pytest.mark.streamflow


def _executed(out: Path, run: int = 1) -> dict:
    return json.loads(next((out / "runs" / str(run)).glob("*.executed.ipynb")).read_text())


def _texts(cell: dict) -> str:
    return "".join(o.get("text", "") + o.get("ename", "") for o in cell["outputs"])


def test_failing_cell_stops_the_run_like_jupyter(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = notebook(tmp_path / "fail.ipynb", [
        "x = 1\nprint('first')",
        "print('before')\nz = x / 0",
        "print('after', x)",
        "print('independent')",
    ])
    status = main(["run", str(path), "-o", str(tmp_path / "wf"), "--quiet"])
    err = capsys.readouterr().err
    assert status == 1
    assert "cell 2" in err and "line 2" in err and "ZeroDivisionError" in err
    cells = _executed(tmp_path / "wf")["cells"]
    assert _texts(cells[1]) == "first\n"
    assert [o["output_type"] for o in cells[2]["outputs"]] == ["stream", "error"]
    assert cells[2]["outputs"][1]["ename"] == "ZeroDivisionError"
    # nothing after the failing cell counts as run, even a branch that did not depend on it
    assert cells[3]["outputs"] == [] and cells[3]["execution_count"] is None
    assert cells[4]["outputs"] == [] and cells[4]["execution_count"] is None


def test_failing_iteration_of_a_scattered_loop(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = notebook(tmp_path / "loop.ipynb", [
        "def work(v):\n    if v == 3:\n        raise ValueError(f'bad item {v}')\n"
        "    print('item', v)\n    return v",
        "ys = [work(v) for v in range(6)]",
        "print(ys)",
    ])
    status = main(["run", str(path), "-o", str(tmp_path / "wf"), "--quiet", "--chunks", "2"])
    err = capsys.readouterr().err
    assert status == 1 and "bad item 3" in err and "cell 2" in err
    cell = _executed(tmp_path / "wf")["cells"][2]
    assert _texts(cell).startswith("item 0\nitem 1\nitem 2\n")
    assert cell["outputs"][-1]["output_type"] == "error"
    assert _executed(tmp_path / "wf")["cells"][3]["outputs"] == []


KILL_ONCE = (
    "import os, signal\nmarker = {marker!r}\nif not os.path.exists(marker):\n"
    "    open(marker, 'w').close()\n    os.kill(os.getpid(), signal.SIGKILL)\nprint(x + 1)"
)


def test_crashed_step_is_retried(tmp_path: Path) -> None:
    path = notebook(tmp_path / "kill.ipynb",
                    ["x = 41", KILL_ONCE.format(marker=str(tmp_path / "tried"))])
    outputs, _ = run_with_workflow(path, tmp_path / "run", "--retries", "2")
    assert outputs[2] == ["stdout: 42\n"]
    assert (tmp_path / "tried").exists()


def test_the_progress_tells_a_retry_and_then_the_steps_end(tmp_path: Path) -> None:
    """Through the CLI: the job that died is told as run again, not as the step failing."""
    import subprocess
    import sys

    path = notebook(tmp_path / "kill.ipynb",
                    ["x = 41", KILL_ONCE.format(marker=str(tmp_path / "tried"))])
    done = subprocess.run([sys.executable, "-m", "nb2cwl", "run", str(path), "-o",
                           str(tmp_path / "wf"), "--granularity", "cell", "--retries", "2"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    retried = [n for n, line in enumerate(lines)
               if "failed; StreamFlow runs it again (--retries 2)" in line]
    assert len(retried) == 1, done.stdout
    step = lines[retried[0]].split()[0]
    ends = [line for line in lines if line.startswith("[") and f" {step} " in line]
    assert ends == [ends[0]] and " done (" in ends[0], done.stdout
    assert not any(" failed (" in line for line in lines), done.stdout


def test_crashed_step_without_retries_fails(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = notebook(tmp_path / "kill.ipynb",
                    ["x = 41", KILL_ONCE.format(marker=str(tmp_path / "tried"))])
    assert main(["run", str(path), "-o", str(tmp_path / "wf"), "--quiet"]) == 1
    assert "StreamFlow" in capsys.readouterr().err


def test_a_killed_step_fails_the_run_in_one_line_naming_it(tmp_path: Path) -> None:
    """Through the CLI, without --retries (issue 27 item 4): one line, the step's name and
    how it ended; no traceback."""
    import subprocess
    import sys

    path = notebook(tmp_path / "kill.ipynb",
                    ["x = 41", KILL_ONCE.format(marker=str(tmp_path / "tried"))])
    done = subprocess.run([sys.executable, "-m", "nb2cwl", "run", str(path), "-o",
                           str(tmp_path / "wf"), "--granularity", "cell", "--quiet"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("nb2cwl: error:")]
    assert len(errors) == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "step cell_2 failed: Killed; its process was killed" in errors[0], errors
    assert "--retries N" in errors[0], errors


def test_rerun_reuses_unchanged_steps(tmp_path: Path) -> None:
    cells = ["import time\nstamp = time.time()\nprint('stamp', stamp)", "print('second', stamp)"]
    path = notebook(tmp_path / "cache.ipynb", cells)
    out = tmp_path / "wf"
    one_per_cell = ["--quiet", "--granularity", "cell"]
    assert main(["run", str(path), "-o", str(out), *one_per_cell]) == 0
    first = _executed(out, 1)["cells"]
    # the user edits the second cell and runs again: the first step is not redone
    document = json.loads(path.read_text())
    document["cells"][2]["source"] = "print('edited', stamp)"
    path.write_text(json.dumps(document))
    assert main(["run", str(path), "-o", str(out), *one_per_cell]) == 0
    second = _executed(out, 2)["cells"]
    assert _texts(second[1]) == _texts(first[1])  # same time stamp: reused, not rerun
    assert _texts(second[2]).startswith("edited")
    assert main(["run", str(path), "-o", str(out), *one_per_cell, "--no-cache"]) == 0
    assert _texts(_executed(out, 3)["cells"][1]) != _texts(first[1])


def test_an_earlier_nb2cwls_runtime_folder_is_replaced_by_the_zip(tmp_path: Path) -> None:
    """An output folder compiled before the runtime became one zip holds nb2cwl_runtime/,
    listed in its manifest: compiling again removes those files and the emptied folder, but
    a file of the user's in it stays, and so does the folder then."""
    path = notebook(tmp_path / "nb.ipynb", ["print(1)"])
    for out, mine in [(tmp_path / "wf", False), (tmp_path / "kept", True)]:
        assert main([str(path), "-o", str(out)]) == 0
        old = out / "nb2cwl_runtime"
        old.mkdir()
        (old / "step.py").write_text("# an earlier runtime\n")
        (old / "__pycache__").mkdir()  # what its steps' imports left
        (old / "__pycache__" / "step.cpython-311.pyc").write_bytes(b"bytecode")
        if mine:
            (old / "notes.txt").write_text("mine\n")
        manifest = json.loads((out / ".nb2cwl-manifest.json").read_text())
        manifest["files"] = [f for f in manifest["files"] if f != "nb2cwl_runtime.zip"]
        manifest["files"].append("nb2cwl_runtime/step.py")
        (out / ".nb2cwl-manifest.json").write_text(json.dumps(manifest))
        (out / "nb2cwl_runtime.zip").unlink()
        assert main([str(path), "-o", str(out)]) == 0
        assert (out / "nb2cwl_runtime.zip").is_file()
        assert not (old / "step.py").exists()
        assert old.exists() == mine and (not mine or (old / "notes.txt").is_file())


@pytest.mark.parametrize("escape", ["../outside.txt", "/tmp/nb2cwl-absolute.txt"])
def test_manifest_cannot_delete_outside_the_output_dir(escape: str, tmp_path: Path) -> None:
    path = notebook(tmp_path / "nb.ipynb", ["print(1)"])
    out = tmp_path / "wf"
    assert main([str(path), "-o", str(out)]) == 0
    victim = (out / escape).resolve() if not escape.startswith("/") else Path(escape)
    victim.write_text("keep me")
    manifest = json.loads((out / ".nb2cwl-manifest.json").read_text())
    manifest["files"].append(escape)
    (out / ".nb2cwl-manifest.json").write_text(json.dumps(manifest))
    assert main([str(path), "-o", str(out)]) == 0
    assert victim.read_text() == "keep me"
    victim.unlink()


def test_hostile_step_names_and_cell_ids_stay_confined(tmp_path: Path) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "P"}
    first = nbformat.v4.new_code_cell("a = 1")
    first.metadata["tags"] = ["nb2cwl:step=../../etc;rm -rf $HOME `x`"]
    second = nbformat.v4.new_code_cell("print(a)")
    second.metadata["tags"] = ["nb2cwl:step=runtime"]
    nb.cells = [first, second]
    path = tmp_path / "hostile.ipynb"
    nbformat.write(nb, path)
    out = tmp_path / "wf"
    outputs, _ = run_with_workflow(path, tmp_path / "run")
    assert outputs[1] == ["stdout: 1\n"]
    assert main([str(path), "-o", str(out)]) == 0
    written = [p.relative_to(out) for p in out.rglob("*")]
    assert all(".." not in p.parts for p in written)
    names = sorted(p.name for p in (out / "steps").iterdir())
    assert len(names) == 3 and "step_runtime.py" in names and "assemble.py" in names
    assert all(re.fullmatch(r"[A-Za-z0-9_]+\.py", name) for name in names)
