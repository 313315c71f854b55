"""The step runtime: values between steps, failures, figures and random state."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from equivalence import run_with_nbclient, run_with_workflow
from test_cli import notebook

from nb2cwl.cli import main
from nb2cwl.runtime import code_names, values


def _round_trip(namespace: dict, names: list[str], tmp_path: Path, groups=()) -> dict:
    values.save_values(namespace, names, groups, str(tmp_path), set())
    loaded: dict = {}
    values.load_values(str(tmp_path), names, loaded, lambda needed: None)
    return loaded


def test_values_are_saved_by_type(tmp_path: Path) -> None:
    namespace = {"arr": np.arange(6).reshape(2, 3), "df": pd.DataFrame({"a": [1, 2]}),
                 "obj": {"k": [1, 2]}, "n": 3}
    loaded = _round_trip(namespace, list(namespace), tmp_path)
    index = json.loads((tmp_path / "index.json").read_text())
    assert index["arr"]["format"] == "npy" and index["df"]["format"] == "pandas"
    assert index["obj"]["format"] == "pickle"
    assert (loaded["arr"] == namespace["arr"]).all()
    assert loaded["df"].equals(namespace["df"])
    assert loaded["obj"] == namespace["obj"] and loaded["n"] == 3


def test_shared_objects_stay_shared(tmp_path: Path) -> None:
    a = [1, 2]
    namespace = {"a": a, "b": a, "c": {"inner": a}}
    loaded = _round_trip(namespace, ["a", "b", "c"], tmp_path, groups=[["a", "c"]])
    assert loaded["a"] is loaded["b"] is loaded["c"]["inner"]


def test_missing_value_stays_unbound(tmp_path: Path) -> None:
    loaded = _round_trip({"x": 1}, ["x", "never_defined"], tmp_path)
    assert loaded == {"x": 1}


def test_unserializable_value_names_variable_and_remedy(tmp_path: Path) -> None:
    namespace = {"gen": (i for i in range(3))}
    with pytest.raises(values.TransferError) as error:
        values.save_values(namespace, ["gen"], [], str(tmp_path), set())
    message = str(error.value)
    assert "gen" in message and "generator" in message and "nb2cwl:step=" in message


@pytest.mark.streamflow
def test_failing_cell_reports_cell_line_and_error(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = notebook(tmp_path / "fail.ipynb", ["x = 1", "y = 2\nz = x / 0\nprint(z)", "print(y)"])
    status = main(["run", str(path), "-o", str(tmp_path / "wf"), "--quiet"])
    err = capsys.readouterr().err
    assert status == 1
    assert "fail.ipynb, cell 2" in err and "line 2" in err
    assert "ZeroDivisionError" in err and "z = x / 0" in err


@pytest.mark.streamflow
def test_random_state_flows_bit_for_bit(tmp_path: Path) -> None:
    path = notebook(tmp_path / "rng.ipynb", [
        "import random\nimport numpy as np",
        "random.seed(3)\nnp.random.seed(4)",
        "print(repr(random.random()), repr(np.random.rand(2).tolist()))",
        "print(repr(random.gauss(0, 1)))",
        "print(repr(np.random.normal(size=3).tolist()))",
        "print(repr(random.random()), repr(np.random.rand()))",
    ])
    jupyter = run_with_nbclient(path, tmp_path / "jupyter")
    workflow, _ = run_with_workflow(path, tmp_path / "workflow")
    assert workflow == jupyter


@pytest.mark.streamflow
def test_classes_keep_identity_and_functions_see_live_globals(tmp_path: Path) -> None:
    path = notebook(tmp_path / "cls.ipynb", [
        "class Point:\n    def __init__(self, x):\n        self.x = x",
        "p = Point(2)\nshift = 10\nmove = lambda q: q.x + shift",
        "shift = 100\nprint(isinstance(p, Point), move(p))",
        "items = [Point(1), p]\nprint(all(isinstance(i, Point) for i in items))",
    ])
    jupyter = run_with_nbclient(path, tmp_path / "jupyter")
    workflow, _ = run_with_workflow(path, tmp_path / "workflow")
    assert workflow == jupyter
    assert "True 102" in workflow[3][0]


def test_a_function_pickled_by_value_keeps_its_cell_file_name_and_source(tmp_path) -> None:
    import linecache
    import types

    name = "/tmp/ipykernel_4242/1037361036.py"
    source = "scale = 2\ndef f(v):\n    g = lambda w: w * scale\n    return g(v)\n"
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    namespace = {"__name__": "__main__"}
    exec(compile(source, name, "exec"), namespace)
    values.dump_object({"f": namespace["f"], "again": namespace["f"]}, str(tmp_path / "f.pkl"),
                       set(), "f")
    del linecache.cache[name]
    # the kernel folder is the process's: the file does not name it (equal values, equal
    # files), and the loading process names the cell in its own, as its kernel would
    assert b"ipykernel_4242" not in (tmp_path / "f.pkl").read_bytes()
    back = values.load_object(str(tmp_path / "f.pkl"), {"scale": 3})
    f = back["f"]
    assert back["again"] is f and f(2) == 6
    inner = next(c for c in f.__code__.co_consts if isinstance(c, types.CodeType))
    here = os.path.join(code_names._kernel_folder(), "1037361036.py")
    assert f.__code__.co_filename == inner.co_filename == here  # not "<dynamic-code>"
    assert linecache.getline(here, 3) == "    g = lambda w: w * scale\n"  # warnings show it


@pytest.mark.streamflow
def test_figures_and_written_files_are_outputs(tmp_path: Path) -> None:
    path = notebook(tmp_path / "fig.ipynb", [
        "import matplotlib.pyplot as plt",
        "plt.plot([1, 2, 3])\nplt.savefig('line.png')\nplt.show()\nprint('after')",
        "import os\nos.makedirs('notes', exist_ok=True)\nopen('notes/n.txt', 'w').write('x')",
    ])
    _, results = run_with_workflow(path, tmp_path / "workflow")
    executed = json.loads(next(results.glob("*.executed.ipynb")).read_text())
    outputs = executed["cells"][2]["outputs"]
    kinds = [o["output_type"] for o in outputs]
    assert kinds[0] == "display_data" and "image/png" in outputs[0]["data"]
    assert outputs[1]["text"] == "after\n"
    assert (results / "written-files" / "line.png").stat().st_size > 0
    assert (results / "written-files" / "notes" / "n.txt").read_text() == "x"


def test_step_can_run_without_nb2cwl_installed(tmp_path: Path) -> None:
    """The generated runtime works from the workflow's zip alone (nb2cwl not importable)."""
    import subprocess

    path = notebook(tmp_path / "nb.ipynb", ["x = 21", "print(x * 2)"])
    main([str(path), "-o", str(tmp_path / "wf"), "--granularity", "cell"])
    work = tmp_path / "job"
    work.mkdir()
    script = tmp_path / "wf" / "steps" / "cell_1.py"
    env = {"PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1"}
    result = subprocess.run([sys.executable, "-I", "-S", str(script), "--runtime",
                             str(tmp_path / "wf" / "nb2cwl_runtime.zip")], cwd=work, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    report = json.loads((work / "nb2cwl-out" / "report.json").read_text())
    assert report["cells"][0]["index"] == 1


@pytest.mark.streamflow
def test_notebook_of_definitions_only_still_gives_executed_notebook(tmp_path: Path) -> None:
    path = notebook(tmp_path / "defs.ipynb", ["import math", "def f(x):\n    return x"])
    outputs, results = run_with_workflow(path, tmp_path / "workflow")
    assert outputs == {1: [""], 2: [""]}
    assert next(results.glob("*.executed.ipynb")).exists()


@pytest.mark.streamflow
def test_data_folder_beside_the_notebook_is_staged(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "data").mkdir(parents=True)
    for number in range(3):
        (source / "data" / f"part{number}.csv").write_text(f"x\n{number}\n{number * 10}\n")
    path = notebook(source / "files.ipynb", [
        "import glob\nimport pandas as pd",
        "paths = sorted(glob.glob('data/*.csv'))\nprint(paths)",
        "frames = [pd.read_csv(p) for p in paths]\nprint(sum(int(f.x.sum()) for f in frames))",
    ])
    jupyter = run_with_nbclient(path, tmp_path / "jupyter", beside=("data",))
    workflow, _ = run_with_workflow(path, tmp_path / "workflow", beside=("data",))
    assert workflow == jupyter
    assert "33" in workflow[3][0]


def test_cache_key_counts_plain_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nb2cwl.runtime.cache import cache_key

    monkeypatch.setenv("NB2CWL_CACHE_DIR", str(tmp_path))
    staged = tmp_path / "xs"
    staged.write_text("1")
    spec = {"step": "cell_2_map", "cells": [{"id": "a", "code": "ys = [f(x) for x in xs]"}]}
    keys = {cache_key(spec, {"chunk": [str(n)], "values": [str(staged)]}) for n in range(3)}
    assert len(keys) == 3  # one job's results never stand in for another's
    moved = tmp_path / "elsewhere"
    moved.write_text("1")
    assert cache_key(spec, {"chunk": ["0"], "values": [str(moved)]}) in keys  # content counts


class _Killed(BaseException):
    """A kill in the middle of a store: nothing after it runs."""


@pytest.mark.parametrize("moment", ["deleting", "renaming"])
def test_a_run_killed_while_it_replaces_a_kept_entry_leaves_no_damaged_complete_entry(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, moment: str) -> None:
    """`nb2cwl run --refresh` replaces kept outputs. Killed half-way through deleting the
    earlier entry (or between its renames), the cache holds the earlier entry whole, or no
    entry: never one marked complete with files missing (fault injection's kill 11)."""
    import shutil as shutil_module

    from nb2cwl.runtime import cache
    from nb2cwl.step_cache import entries

    root = tmp_path / "cache"
    root.mkdir()
    monkeypatch.setenv("NB2CWL_CACHE_DIR", str(root))
    out = tmp_path / "out"
    (out / "files").mkdir(parents=True)
    (out / "files" / "data.npy").write_bytes(b"old" * 100)
    (out / "report.json").write_text('{"step": "cell_1"}')
    cache.store("k", str(out))
    (out / "files" / "data.npy").write_bytes(b"new" * 100)
    monkeypatch.setenv("NB2CWL_CACHE_REFRESH", "1")
    real_rmtree, real_replace = shutil_module.rmtree, os.replace
    replaced: list[str] = []

    def killed_while_deleting(path: str, ignore_errors: bool = False) -> None:
        for parent, _, files in os.walk(path):  # the first file goes, then the kill
            for name in sorted(files, reverse=True):
                os.unlink(os.path.join(parent, name))
                raise _Killed
        real_rmtree(path, ignore_errors=ignore_errors)

    def killed_between_renames(source: str, target: str) -> None:
        if replaced:
            raise _Killed
        replaced.append(source)
        real_replace(source, target)

    if moment == "deleting":
        monkeypatch.setattr(shutil_module, "rmtree", killed_while_deleting)
    else:
        monkeypatch.setattr(os, "replace", killed_between_renames)
    with pytest.raises(_Killed):
        cache.store("k", str(out))
    monkeypatch.setattr(shutil_module, "rmtree", real_rmtree)
    monkeypatch.setattr(os, "replace", real_replace)
    for entry in entries(str(root)):
        assert not entry.complete or cache._damage(entry.path) is None, entry
    monkeypatch.delenv("NB2CWL_CACHE_REFRESH")
    restored = tmp_path / "restored"
    if cache.restore("k", str(restored)):  # whole, old or new
        assert (restored / "files" / "data.npy").read_bytes() in (b"old" * 100, b"new" * 100)
    assert not cache.discarded, cache.discarded


def test_cache_key_is_the_same_from_the_workflows_zip_and_from_a_folder(
        tmp_path: Path) -> None:
    """A step imports the runtime from the workflow's zip, a step of the server from a folder
    copy: the key holds the runtime's source either way, so each finds the other's entries;
    and another runtime's source gives another key."""
    import subprocess

    from nb2cwl.backends.naming import RUNTIME_ARCHIVE, RUNTIME_SOURCE
    from nb2cwl.backends.runtime_archive import write_runtime_archive

    write_runtime_archive(tmp_path / RUNTIME_ARCHIVE)
    folder = tmp_path / "folder" / "nb2cwl_runtime"
    shutil.copytree(RUNTIME_SOURCE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    changed = tmp_path / "changed" / "nb2cwl_runtime"
    shutil.copytree(folder, changed)
    with open(changed / "values.py", "a") as handle:
        handle.write("# another version\n")
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); import nb2cwl_runtime.cache as c; "
             "print(c.__file__); print(c.cache_key({'step': 's', 'cells': []}, {'v': ['1']}))")
    keys = {}
    for name, path in [("zip", tmp_path / RUNTIME_ARCHIVE), ("folder", folder.parent),
                       ("changed", changed.parent)]:
        done = subprocess.run([sys.executable, "-I", "-S", "-c", probe, str(path)],
                              capture_output=True, text=True, check=True,
                              env={"NB2CWL_CACHE_DIR": str(tmp_path)})
        where, keys[name] = done.stdout.split()
        assert where.startswith(str(path))
    assert keys["zip"] == keys["folder"] != keys["changed"]


@pytest.mark.streamflow
def test_star_import_that_shadows_a_builtin_matches_jupyter(tmp_path: Path) -> None:
    path = notebook(tmp_path / "star.ipynb", [
        "from numpy import *",
        "print(round(2.5), max([3, 1]))",  # numpy's round prints 2.0; the builtin's, 2
    ])
    jupyter = run_with_nbclient(path, tmp_path / "jupyter")
    workflow, _ = run_with_workflow(path, tmp_path / "workflow")
    assert workflow == jupyter


@pytest.mark.streamflow
def test_modules_beside_the_notebook_import_in_every_step(tmp_path: Path) -> None:
    """`import helper` finds helper.py beside the notebook, as in the kernel, in the cell that
    imports it and in later steps that replay the import."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "helper.py").write_text("def work(x):\n    return x * x\n")
    (source / "tools").mkdir()
    (source / "tools" / "__init__.py").write_text("SCALE = 3\n")
    path = notebook(source / "m.ipynb", [
        "import helper\nfrom tools import SCALE\nprint(helper.work(2))",
        "values = [helper.work(x) * SCALE for x in range(4)]",
        "print(values, helper.work(5))",
    ], markdown_first=False)
    jupyter = run_with_nbclient(path, tmp_path / "jupyter", beside=("helper.py", "tools"))
    workflow, _ = run_with_workflow(path, tmp_path / "workflow", beside=("helper.py", "tools"))
    assert workflow == jupyter
    assert "[0, 3, 12, 27] 25" in workflow[2][0]


@pytest.mark.streamflow
def test_a_module_a_cell_writes_imports_in_a_later_step(tmp_path: Path) -> None:
    path = notebook(tmp_path / "w.ipynb", [
        "%%writefile helper2.py\ndef work(x):\n    return x * 7\n",
        "import helper2\nprint(helper2.work(6))",
    ], markdown_first=False)
    workflow, _ = run_with_workflow(path, tmp_path / "workflow")
    assert workflow[1] == ["stdout: 42\n"]


# --- settings replayed in a step -------------------------------------------------------------

@pytest.fixture
def step_streams(monkeypatch):
    """The step's own sys.stdout and sys.stderr, installed afresh (pytest swaps them)."""
    from nb2cwl.runtime import capture

    monkeypatch.setattr(capture, "_installed", False)
    monkeypatch.setattr(sys, "stdout", sys.stdout)
    monkeypatch.setattr(sys, "stderr", sys.stderr)

def _module(tmp_path: Path, name: str, body: str = "flag = 0\n") -> None:
    (tmp_path / f"{name}.py").write_text(body)
    sys.path.insert(0, str(tmp_path))


def test_a_setting_waits_for_the_module_it_configures(tmp_path: Path, monkeypatch) -> None:
    """Replayed right after the step imports the module, before the importer goes on; a
    step that never imports it never pays for it."""
    from nb2cwl.runtime.settings import SettingsReplay

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    _module(tmp_path, "configured_lib")
    definitions = {"0:0": {"key": "0:0", "cell": 0, "names": ["configured_lib"],
                           "code": "import configured_lib", "requires": []}}
    setting = {"key": "1:0", "cell": 1, "code": "configured_lib.flag = 7\nprint('hidden')",
               "owners": ["configured_lib"], "requires": ["0:0"]}
    replay = SettingsReplay([setting], definitions, {})
    replay.before_cell(2)
    assert "configured_lib" not in sys.modules
    try:
        import configured_lib  # noqa: F401  (the step's own import)

        assert sys.modules["configured_lib"].flag == 7
    finally:
        sys.modules.pop("configured_lib", None)


def test_a_setting_of_a_module_already_imported_runs_at_once(tmp_path: Path,
                                                             step_streams: None) -> None:
    from nb2cwl.runtime.capture import OutputCapture
    from nb2cwl.runtime.settings import SettingsReplay

    setting = {"key": "1:0", "cell": 1, "owners": [""], "requires": [],
               "code": "import os\nos.environ['NB2CWL_TEST_SETTING'] = 'yes'\nprint('x')"}
    replay = SettingsReplay([setting], {}, {})
    try:
        with OutputCapture(echo=False) as capture:
            replay.before_cell(1)  # only settings of earlier cells
            assert "NB2CWL_TEST_SETTING" not in __import__("os").environ
            replay.before_cell(2)
        assert __import__("os").environ["NB2CWL_TEST_SETTING"] == "yes"
        assert capture.outputs == []  # what a replay prints is not shown again
    finally:
        __import__("os").environ.pop("NB2CWL_TEST_SETTING", None)


def test_streams_reach_the_cell_running_now(step_streams: None) -> None:
    """A handler that kept sys.stderr in one cell writes into the cell running later, and a
    flush sends what is pending, as the kernel's streams do."""
    import logging

    from nb2cwl.runtime.capture import OutputCapture

    with OutputCapture(echo=False):
        handler = logging.StreamHandler(sys.stderr)
    logger = logging.getLogger("nb2cwl-test-streams")
    logger.addHandler(handler)
    try:
        with OutputCapture(echo=False) as later:
            logger.warning("from a handler made earlier")
            print("then stdout")
        assert later.outputs == [
            {"output_type": "stream", "name": "stderr", "text": "from a handler made earlier\n"},
            {"output_type": "stream", "name": "stdout", "text": "then stdout\n"}]
    finally:
        logger.removeHandler(handler)


def test_clear_output_and_display_updates_as_nbclient_keeps_them(step_streams: None) -> None:
    from nb2cwl.runtime.capture import OutputCapture, settle_displays, shown

    with OutputCapture(echo=False) as capture:
        capture.raw_display({"text/plain": "0%"}, display_id="bar")
        capture.raw_display({"text/plain": "100%"}, display_id="bar", update=True)
        print("first")
        capture.clear(wait=True)
        print("second")
    assert capture.outputs == [{"output_type": "stream", "name": "stdout", "text": "second\n"}]
    with OutputCapture(echo=False) as capture:
        capture.raw_display({"text/plain": "0%"}, display_id="bar")
        capture.raw_display({"text/plain": "100%"}, display_id="bar", update=True)
    assert shown(capture.outputs) == [{"output_type": "display_data", "metadata": {},
                                       "data": {"text/plain": "100%"}}]
    # a later cell updates the display an earlier cell shows (the assembler settles it)
    first = capture.outputs
    with OutputCapture(echo=False) as later:
        later.raw_display({"text/plain": "done"}, display_id="bar", update=True)
        print("updated")
    settled = settle_displays([first, later.outputs])
    assert settled[0] == [{"output_type": "display_data", "metadata": {},
                           "data": {"text/plain": "done"}}]
    assert settled[1] == [{"output_type": "stream", "name": "stdout", "text": "updated\n"}]


def test_sets_are_rebuilt_in_their_own_order(tmp_path: Path) -> None:
    """pickle rebuilds a set by inserting its items in order, which often gives another order
    than the set had (the table follows its history); a step's values keep it, and a set held
    twice stays one object."""
    import os
    import subprocess

    code = """
import pickle, random, string, sys
from nb2cwl.runtime import values
random.seed(1)
words = 'the quick brown fox jumps over the lazy dog and the quick cat'.split()
cases = [set(words)] + [set(''.join(random.choice(string.ascii_lowercase)
                                    for _ in range(random.randint(1, 6))) for _ in range(n))
                        for n in (5, 12, 40, 300) for _ in range(20)]
default = kept = 0
for number, found in enumerate(cases):
    path = sys.argv[1] + f'/{number}.pkl'
    values.dump_object({'a': found, 'b': found}, path, set(), 'x')
    back = values.load_object(path, {})
    assert back['a'] is back['b']
    kept += list(back['a']) == list(found)
    default += list(pickle.loads(pickle.dumps(found))) == list(found)
first = values.load_object(sys.argv[1] + '/0.pkl', {})['a']
print(len(cases), default, kept, list(set(words)) == list(first))
"""
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                          text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    total, default, kept, first = done.stdout.split()
    assert first == "True"  # the vocabulary above: pickle's default reorders it
    assert int(kept) >= int(default) and int(kept) >= 0.75 * int(total)


def _chunk_warnings(filters: str) -> list:
    """The events of two 'chunks' of a loop, each a fresh registry, warning from one line."""
    import warnings

    from nb2cwl.runtime import capture, warnings_once

    events = []
    for _chunk in range(2):
        namespace: dict = {"__name__": "__main__"}
        with warnings.catch_warnings():
            exec(filters, namespace)
            with capture.OutputCapture(echo=False) as cap, warnings_once.recording():
                exec(compile("import warnings\nfor i in range(3):\n"
                             "    warnings.warn('careful', UserWarning)\n", "<cell>", "exec"),
                     namespace)
            for _moment, kind, payload in cap.events:
                if kind == "warning":  # as if each chunk were a process of its own
                    payload["process"] = f"chunk {_chunk}"
            events += cap.events
    with warnings.catch_warnings():
        exec(filters, {})
        return capture.replay(warnings_once.shown_once(events))


def test_a_warning_shown_in_every_chunk_of_a_loop_shows_once_as_in_one_process():
    outputs = _chunk_warnings("import warnings\nwarnings.simplefilter('default')")
    assert [o["text"].count("UserWarning: careful") for o in outputs] == [1]


def test_a_warning_the_filters_always_show_shows_every_time():
    outputs = _chunk_warnings("import warnings\nwarnings.simplefilter('always')")
    assert [o["text"].count("UserWarning: careful") for o in outputs] == [6]


def test_a_warning_shown_again_after_the_filters_change_is_kept():
    """Each change of the filters (a catch_warnings block too) empties the registries: the
    process shows the warning again, and so does the loop's gathered output."""
    from nb2cwl.runtime import capture, warnings_once

    namespace: dict = {"__name__": "__main__"}
    with capture.OutputCapture(echo=False) as cap, warnings_once.recording():
        exec(compile("import warnings\nfor i in range(3):\n    with warnings.catch_warnings():\n"
                     "        warnings.simplefilter('ignore', DeprecationWarning)\n"
                     "    warnings.warn('careful')\n", "<cell>", "exec"), namespace)
    outputs = capture.replay(warnings_once.shown_once(cap.events))
    assert [o["text"].count("UserWarning: careful") for o in outputs] == [3]


def test_a_setting_that_cannot_be_replayed_is_named_as_jupyter_numbers_it(
        step_streams: None, capsys: pytest.CaptureFixture[str]) -> None:
    from nb2cwl.runtime.settings import SettingsReplay

    setting = {"key": "1:0", "cell": 1, "shown": "In [2]", "owners": [""], "requires": [],
               "code": "import os\nos.environ['NB2CWL_TEST_SETTING'] = undefined_name"}
    SettingsReplay([setting], {}, {}).before_cell(2)
    assert "nb2cwl: could not replay the setting of In [2] (import os): NameError" in \
        capsys.readouterr().err


def test_a_steps_replayed_settings_name_their_cells_as_jupyter_does(tmp_path: Path) -> None:
    from nb2cwl.api import compile_notebook
    from nb2cwl.backends.step_scripts import step_spec
    from nb2cwl.options import CompileOptions

    path = tmp_path / "nb.ipynb"
    notebook(path, ["import os", "", "os.environ['NB2CWL_MODE'] = 'fast'",
                    "print(os.environ['NB2CWL_MODE'])"])
    workflow = compile_notebook(str(path), CompileOptions(granularity="cell"))
    last = workflow.steps[-1]
    settings = step_spec(workflow, last)["settings"]
    assert [s["shown"] for s in settings] == ["In [2]"], settings
