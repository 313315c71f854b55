"""Partitioning: a step boundary only where it pays or is needed; the cost model's inputs
(static estimates, timings recorded in the notebook, a profile); profile and calibrate."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from test_analysis import make_notebook

from nb2cwl.api import compile_notebook
from nb2cwl.cli import main
from nb2cwl.options import CompileOptions

HEAVY = "import time\ntime.sleep(2)\n{name} = {value}"


def _cells(workflow) -> list[list[int]]:
    return [[c.index for c in s.cells] for s in workflow.steps]


def test_cheap_cells_share_one_step(tmp_path):
    path = make_notebook(tmp_path, [f"v{i} = {i}" for i in range(30)] + ["print(v29)"])
    assert len(compile_notebook(path).steps) == 1
    assert len(compile_notebook(path, CompileOptions(granularity="cell")).steps) == 31


def test_heavy_independent_cells_keep_their_own_steps(tmp_path):
    path = make_notebook(tmp_path, ["x = 1", HEAVY.format(name="a", value="x + 1"),
                                    HEAVY.format(name="b", value="x + 2"), "print(a + b)"])
    workflow = compile_notebook(path)
    assert _cells(workflow) == [[0], [1], [2], [3]]
    heavy = [s for s in workflow.steps if s.first_cell in (1, 2)]
    assert all(any("runs beside" in r for r in s.reasons) for s in heavy)


def test_heavy_cells_in_a_chain_gain_nothing_apart(tmp_path):
    path = make_notebook(tmp_path, [HEAVY.format(name="a", value="1"),
                                    HEAVY.format(name="b", value="a + 1"), "print(b)"])
    assert _cells(compile_notebook(path)) == [[0, 1, 2]]


def test_a_deployment_of_one_core_runs_nothing_side_by_side(tmp_path):
    path = make_notebook(tmp_path, [HEAVY.format(name="a", value="1"),
                                    HEAVY.format(name="b", value="2"), "print(a + b)"])
    definitions = tmp_path / "one.yml"
    definitions.write_text("deployments:\n  one:\n    type: local\n    config: {}\n"
                           "    nb2cwl:\n      costs: {step_seconds: 0.3, cores: 1}\n")
    options = CompileOptions(deployment="one", deployment_file=str(definitions))
    assert _cells(compile_notebook(path, options)) == [[0, 1, 2]]


def test_steps_on_other_deployments_are_not_fused(tmp_path):
    path = make_notebook(tmp_path, ["a = 1", "b = a + 1", "c = b + 1", "print(c)"])
    options = CompileOptions(targets=(("cell_1", "docker"),))
    assert _cells(compile_notebook(path, options)) == [[0], [1], [2, 3]]


def test_a_tagged_step_stays_as_asked(tmp_path):
    tagged = nbformat.v4.new_code_cell("b = a + 1")
    tagged.metadata["tags"] = ["nb2cwl:step=middle"]
    path = make_notebook(tmp_path, ["a = 1", tagged, "print(b)"])
    workflow = compile_notebook(path)
    assert [s.name for s in workflow.steps] == ["cell_0", "step_middle", "cell_2"]


def test_a_scattered_loop_keeps_its_parts_and_fuses_around_them(tmp_path):
    path = make_notebook(tmp_path, [
        "def work(x):\n    import time\n    time.sleep(0.5)\n    return x",
        "xs = list(range(8))", "n = len(xs)", "ys = [work(x) for x in xs]", "total = sum(ys)",
        "print(total, n)"])
    workflow = compile_notebook(path)
    roles = [(s.role, [c.index for c in s.cells]) for s in workflow.steps]
    # the cells around the loop are fused, then joined with its split and gather
    # (tests/test_loop_joins.py); one step per cell keeps every part apart
    assert roles == [("split", [1, 2, 3]), ("map", [3]), ("gather", [3, 4, 5])]
    apart = compile_notebook(path, CompileOptions(granularity="cell"))
    assert [s.role for s in apart.steps] == ["cell", "cell", "split", "map", "gather", "cell",
                                             "cell"]


def test_a_fused_step_runs_a_redefinition_in_its_place(tmp_path):
    path = make_notebook(tmp_path, ["def helper(x):\n    return x + 1",
                                    "def work(v):\n    return helper(v)", "print(work(1))",
                                    "def helper(x):\n    return x * 10", "print(work(2))"])
    (step,) = compile_notebook(path).steps
    assert [c.index for c in step.cells] == [2, 3, 4]
    assert step.replay == ("0:0", "1:0")


def test_timings_recorded_in_the_notebook_replace_the_estimates(tmp_path):
    slow = [nbformat.v4.new_code_cell(f"{name} = 1") for name in ("a", "b")]
    for cell in slow:
        cell.metadata["execution"] = {"iopub.execute_input": "2024-01-01T00:00:00.000Z",
                                      "shell.execute_reply": "2024-01-01T00:00:05.000Z"}
    path = make_notebook(tmp_path, [*slow, "print(a + b)"])
    workflow = compile_notebook(path)
    assert _cells(workflow) == [[0], [1], [2]]
    assert {c.seconds_from for s in workflow.steps for c in s.cells} == {"notebook",
                                                                          "estimate"}


def test_a_profile_replaces_the_estimates(tmp_path):
    path = make_notebook(tmp_path, ["a = 1", "b = 2", "print(a + b)"])
    ids = [c["id"] for c in json.loads(Path(path).read_text())["cells"]]
    profile = tmp_path / "nb.profile.json"
    profile.write_text(json.dumps({"nb2cwl-profile": 1, "cells": {
        ids[0]: {"seconds": 4.0}, ids[1]: {"seconds": 4.0}, ids[2]: {"seconds": 0.01}}}))
    assert _cells(compile_notebook(path)) == [[0, 1, 2]]
    profiled = compile_notebook(path, CompileOptions(profile=str(profile)))
    assert _cells(profiled) == [[0], [1], [2]]


def test_a_broken_profile_is_one_clear_line(tmp_path, capsys):
    path = make_notebook(tmp_path, ["a = 1"])
    (tmp_path / "bad.json").write_text("{")
    assert main(["explain", path, "--profile", str(tmp_path / "bad.json")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("nb2cwl: error:") and "--profile" in err and len(
        err.strip().splitlines()) == 1


@pytest.mark.streamflow
def test_profile_records_seconds_memory_and_value_sizes(tmp_path, capsys):
    path = make_notebook(tmp_path, ["import time\ntime.sleep(0.3)\ndata = list(range(1000))",
                                    "print(len(data))"])
    output = tmp_path / "nb.profile.json"
    assert main(["profile", path, "-o", str(output)]) == 0
    profile = json.loads(output.read_text())
    cells = sorted(profile["cells"].values(), key=lambda c: c["index"])
    assert cells[0]["seconds"] >= 0.3 and cells[0]["value_bytes"]["data"] > 1000
    assert cells[0]["peak_memory_mb"] > 10
    printed = capsys.readouterr().out
    assert "--profile" in printed and "slowest: In [1] 0." in printed  # Jupyter's numbers
    assert [c["prompt"] for c in cells] == [1, 2]
    mine = tmp_path / "mine.json"
    mine.write_text('{"not": "a profile"}')
    assert main(["profile", path, "-o", str(mine)]) == 1  # never replaces the user's file
    assert json.loads(mine.read_text()) == {"not": "a profile"}


@pytest.mark.streamflow
def test_calibrate_measures_and_keeps_the_costs(tmp_path, monkeypatch, capsys):
    calibration = tmp_path / "calibration.json"
    monkeypatch.setenv("NB2CWL_CALIBRATION", str(calibration))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # StreamFlow's default scratch
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr("tempfile.tempdir", None)
    assert main(["calibrate", "--repeats", "1"]) == 0
    left = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "tmp").rglob("*"))
    assert left in ([], ["tmp/streamflow"]), left  # StreamFlow's job folders went with the runs
    kept = json.loads(calibration.read_text())["local"]
    assert 0.001 <= kept["step_seconds"] < 10 and kept["bytes_per_second"] > 1e5
    path = make_notebook(tmp_path, [HEAVY.format(name="a", value="1"), "print(a)"])
    assert main(["explain", path]) == 0
    assert "measured by nb2cwl calibrate" in capsys.readouterr().out


def _timed(sources_and_seconds: list[tuple[str, float]]) -> list:
    """Code cells whose execution timing JupyterLab recorded: `seconds` each."""
    cells = []
    for source, seconds in sources_and_seconds:
        cell = nbformat.v4.new_code_cell(source)
        end = f"2024-01-01T00:00:{seconds:06.3f}Z"
        cell.metadata["execution"] = {"iopub.execute_input": "2024-01-01T00:00:00.000Z",
                                      "shell.execute_reply": end}
        cells.append(cell)
    return cells


def test_a_light_cell_after_side_by_side_steps_joins_a_branch(tmp_path):
    """On its own it would pay a boundary and wait for a core; it joins the branch whose
    values it needs, or the one that ends first."""
    light = [("a = 1", 2.0), ("b = 2", 3.0), ("c = 3", 0.2), ("print(a, b, c)", 0.01)]
    workflow = compile_notebook(make_notebook(tmp_path, _timed(light)))
    assert _cells(workflow) == [[0, 2], [1], [3]]
    joined = workflow.steps[0]
    assert joined.name == "cells_0_and_2"  # cell 1 runs in another step
    assert any("cell_2 (about 0.2 s of work) joined it" in r for r in joined.reasons)
    assert any("runs beside cell_1" in r for r in joined.reasons)

    needs_b = [light[0], light[1], ("c = b + 1", 0.2), light[3]]
    assert _cells(compile_notebook(make_notebook(tmp_path, _timed(needs_b)))) == [
        [0], [1, 2], [3]]
    both = [light[0], light[1], ("c = a + b", 0.2), light[3]]  # needs both: after them
    assert _cells(compile_notebook(make_notebook(tmp_path, _timed(both)))) == [
        [0], [1], [2, 3]]


def _two_cores(tmp_path) -> CompileOptions:
    definitions = tmp_path / "two.yml"
    definitions.write_text("deployments:\n  two:\n    type: local\n    config: {}\n"
                           "    nb2cwl:\n      costs: {step_seconds: 0.3, cores: 2}\n")
    return CompileOptions(deployment="two", deployment_file=str(definitions))


def test_a_join_that_gains_says_by_how_much(tmp_path):
    cells = _timed([("a = 1", 2.0), ("b = 2", 2.1), ("c = 3", 0.3), ("print(a, b, c)", 0.01)])
    workflow = compile_notebook(make_notebook(tmp_path, cells), _two_cores(tmp_path))
    assert _cells(workflow) == [[0, 2], [1], [3]]
    reason = next(r for r in workflow.steps[0].reasons if "joined it" in r)
    assert "end after about 2.3 s instead of about 2.6 s" in reason, reason
    assert "waits for a free core" in reason
    other = next(r for r in workflow.steps[1].reasons if "runs beside" in r)
    assert "runs beside cells_0_and_2 " in other, other  # the joined step's name


@pytest.mark.parametrize(("hazard", "apart"), [
    # a definition in the other branch's cell would run before cell 1, or not at all (cell 3
    # may join the branch that defines it, cell 2)
    ([("def helper():\n    return 1", 0.0), ("a = helper()", 2.0),
      ("def helper():\n    return 2\nb = 2", 2.1), ("c = helper()", 0.3),
      ("print(a, b, c)", 0.01)], (1, 3)),
    # the other branch reads it: joined to cell 0, cell 2 would wait for cell 0
    ([("a = 1", 2.0), ("c = 3", 0.3), ("b = c + 1", 2.1), ("print(a, b, c)", 0.01)], (0, 1)),
    # files stay with the steps the file plan orders by their first cell
    ([("a = 1", 2.0), ("b = 2", 2.1), ("open('c.txt', 'w').write('3')", 0.3),
      ("print(a, b, open('c.txt').read())", 0.01)], (0, 2)),
])
def test_no_join_where_it_would_change_a_result_or_hold_a_branch_up(tmp_path, hazard, apart):
    workflow = compile_notebook(make_notebook(tmp_path, _timed(hazard)), _two_cores(tmp_path))
    assert len([s for s in workflow.steps if any("runs beside" in r for r in s.reasons)]) == 2
    assert not any(set(apart) <= {c.index for c in s.cells} for s in workflow.steps), (
        _cells(workflow))


@pytest.mark.streamflow
def test_a_joined_branch_runs_as_in_jupyter(tmp_path):
    from equivalence import run_with_nbclient, run_with_workflow

    cells = _timed([
        ("import random\nimport time\nrandom.seed(1)\nstate = random.random()", 0.01),
        ("time.sleep(0.3)\nfirst = [random.random() for _ in range(3)]\nprint(first)", 2.0),
        ("time.sleep(0.3)\nsecond = sorted(range(5), reverse=True)\nprint(second)", 3.0),
        ("def shown(value):\n    return f'beside {value:.6f}'", 0.0),  # run in its place
        ("after = random.Random(5).random() + state\nprint(shown(after))", 0.2),
        ("print(len(first) + len(second), round(after, 6))", 0.01)])
    source = Path(make_notebook(tmp_path, cells))
    ours, _ = run_with_workflow(source, tmp_path / "workflow")
    workflow = compile_notebook(str(source))
    assert _cells(workflow) == [[0], [1, 3, 4], [2], [5]]
    assert any("cell_4 (about 0.2 s of work) joined it" in r for r in workflow.steps[1].reasons)
    assert ours == run_with_nbclient(source, tmp_path / "kernel")


SETTLE = ("import time\n\ndef settle(seconds):\n    started = time.time()\n"
          "    while time.time() - started < seconds:\n        pass\n    return seconds")


def test_a_while_loop_is_not_assumed_cheap(tmp_path):
    """Its iterations have no bound in the code: two independent cells that run one run side
    by side until a run has measured them, and explain names the loop."""
    from nb2cwl.analysis.cost import estimate_cell, function_definitions

    functions = function_definitions(SETTLE)
    assert estimate_cell("a = settle(1)", functions).unbounded == (
        "a while loop in settle() at line 5 of its cell")
    assert estimate_cell("n = 0\nwhile n < 3:\n    n += 1", {}).unbounded == (
        "a while loop at line 2")
    assert estimate_cell("while False:\n    pass\nfor i in range(3):\n    pass",
                         {}).unbounded == ""
    recursive = function_definitions(
        "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
        "def even(n):\n    return n == 0 or odd(n - 1)\n"
        "def odd(n):\n    return n != 0 and even(n - 1)")
    assert estimate_cell("x = fib(30)", recursive).unbounded == "fib() calls itself"
    assert estimate_cell("x = odd(9)", recursive).unbounded == (
        "odd() calls itself (through even())")
    cells = [SETTLE, "a = settle(0.2)", "b = settle(0.3)", "print(a + b)"]
    workflow = compile_notebook(make_notebook(tmp_path, cells), _two_cores(tmp_path))
    assert _cells(workflow) == [[1], [2], [3]]
    reason = next(r for r in workflow.steps[0].reasons if "runs beside" in r)
    assert ("its cost has no bound in the code (In [2]: a while loop in settle() at line 5 of "
            "its cell), so it is not assumed cheap") in reason, reason
    measured = _timed([(SETTLE, 0.0), ("a = settle(0.2)", 0.01), ("b = settle(0.3)", 0.01),
                       ("print(a + b)", 0.01)])  # as JupyterLab recorded them
    assert _cells(compile_notebook(make_notebook(tmp_path, measured),
                                   _two_cores(tmp_path))) == [[1, 2, 3]]


def test_a_measured_step_beside_an_unbounded_one_says_what_it_gains(tmp_path):
    cells = [SETTLE, "a = settle(0.2)", *_timed([("b = 2", 3.0)]), "print(a + b)"]
    workflow = compile_notebook(make_notebook(tmp_path, cells), _two_cores(tmp_path))
    assert _cells(workflow) == [[1], [2], [3]]
    reason = next(r for r in workflow.steps[1].reasons if "runs beside" in r)
    assert "about 2.4 s gained" in reason, reason  # not the other's estimate: it has no bound


@pytest.mark.streamflow
def test_cells_with_while_loops_run_side_by_side_as_in_jupyter(tmp_path):
    from equivalence import run_with_nbclient, run_with_workflow

    source = Path(make_notebook(tmp_path, [
        SETTLE, "a = settle(0.3)\nprint('a', a)", "b = settle(0.2)\nprint('b', b)",
        "print(a + b)"]))
    assert _cells(compile_notebook(str(source))) == [[1], [2], [3]]
    ours, _ = run_with_workflow(source, tmp_path / "workflow")
    assert ours == run_with_nbclient(source, tmp_path / "kernel")
