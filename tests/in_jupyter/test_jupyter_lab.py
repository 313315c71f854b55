"""nb2cwl's JupyterLab 4 / Notebook 7 front end in a real browser, end to end.

A real `jupyter lab` on 127.0.0.1 (a fresh root folder; the prebuilt extension and the server
extension's configuration found through JUPYTER_PATH and JUPYTER_CONFIG_PATH, as an install
puts them), Debian's chromium driven by Playwright for Python (tests/engines/browser.py). It
checks the side panel, the commands, the cell badges, live outputs equal to a top-to-bottom
nbclient run's, stale markers, "Run changed", cancelling (no process left), a failing cell,
the graph view, and the same extension in Notebook 7's notebook page.

The app is driven through its command registry and promises (`window.jupyterapp`, exposed by
--LabApp.expose_app_in_browser), not through menus or DOM status hints, which raced.
Screenshots go to $NB2CWL_SCREENSHOTS when set (the docs' pictures come from there), else to
the test's temporary folder.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from in_jupyter.jupyter_helpers import jupyter_paths_in, processes_with, start_lab, stop_lab
from nb2cwl.checking.reference import kernel_environment

TOKEN = "nb2cwl-e2e"
_WORKSPACES = itertools.count(1)  # a JupyterLab workspace per opened page
RUN_TIMEOUT_MS = 90_000
SHOTS: Path | None = None  # set by the lab fixture

pytestmark = [pytest.mark.streamflow, pytest.mark.browser]


@pytest.fixture(autouse=True)
def jp_asyncio_loop():
    """pytest-jupyter's (conftest.py) would close the event loop Playwright's sync API runs:
    these tests start their server as a process of its own, and need no loop here."""
    yield None


@pytest.fixture(autouse=True)
def jp_server_cleanup():
    """No in-process Jupyter Server to clean up here (see jp_asyncio_loop)."""
    yield


# ---- notebooks ---------------------------------------------------------------------------


def _code(source: str, step: str | None = None) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    if step:  # one step per cell, so that "Run changed" has steps to reuse
        cell.metadata["tags"] = [f"nb2cwl:step={step}"]
    return cell


def _notebook(cells: list) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    return nb


def write_notebooks(root: Path) -> None:
    nbformat.write(_notebook([
        nbformat.v4.new_markdown_cell("# nb2cwl e2e"),
        _code("x = 21\nprint('x is', x)", "first"),
        _code("y = x * 2\nprint('y is', y)", "second"),
        _code("from IPython.display import HTML\n"
              "HTML(f'<b class=\"nb2cwl-e2e-html\">y = {y}</b>')", "third"),
    ]), root / "demo.ipynb")
    nbformat.write(_notebook([_code("a = 1\nprint('a is', a)", "one"),
                              _code("b = a + 1\nprint('b is', b)", "two")]),
                   root / "reopened.ipynb")
    nbformat.write(_notebook([
        _code("import time\nfrom IPython.display import clear_output\n"
              "print('cleared')\nclear_output()\nprint('start')", "a"),
        _code("time.sleep(30)\nprint('slept')", "b"),
    ]), root / "slow.ipynb")
    nbformat.write(_notebook([
        _code("from nb2cwl import parallel_task\n\n@parallel_task\ndef square(v):\n"
              "    return v * v\n\nsquares = [square(v) for v in range(4)]\nprint(sum(squares))"),
    ]), root / "scatter.ipynb")
    nbformat.write(_notebook([
        _code("x = 1\nprint('before')", "one"),
        _code("y = x / 0", "two"),
        _code("print('after', y)", "three"),
    ]), root / "failing.ipynb")
    nbformat.write(_notebook([  # no tags: the three cells are fused into one step
        _code("x = 1\nprint('before')"),
        _code("y = x / 0"),
        _code("print('after', y)"),
    ]), root / "fused_failing.ipynb")
    nbformat.write(_notebook([  # fused into one step, unless the user asks for one per cell
        _code("x = 2\nprint('x', x)"),
        _code("y = x + 1\nprint('y', y)"),
        _code("print('sum', x + y)"),
    ]), root / "granular.ipynb")
    gate = root / "gate"  # while it exists, the second cell waits
    nbformat.write(_notebook([
        _code("import os, time\nprint('first')", "first"),
        _code(f"while os.path.exists({str(gate)!r}):\n    time.sleep(0.1)\nwaited = True",
              "second"),
        _code("print('third', waited)", "third"),  # waits for the second
    ]), root / "gated.ipynb")
    nbformat.write(_notebook([
        _code("x = (1"),  # a syntax error
        _code("print(x)"),
    ]), root / "broken.ipynb")
    nbformat.write(_notebook([  # loops that stay sequential: a warning on their cells
        _code("from nb2cwl import parallel_task\n\n@parallel_task\ndef f(v):\n"
              "    return v * v\n\nres = []\nfor v in range(4):\n    if v > 2:\n"
              "        break\n    res.append(f(v))\nprint(res)"),
        _code("import random\nvals = [random.random() for _ in range(3)]"),
        _code("print(len(vals))"),
    ]), root / "warnings.ipynb")


# ---- the server --------------------------------------------------------------------------


def _settings(folder: Path) -> None:
    """User settings for the app: no "news" toast over the screenshots."""
    settings = folder / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A running `jupyter lab` with nb2cwl's extensions; yields its base URL and folders."""
    global SHOTS
    home = tmp_path_factory.mktemp("lab")
    SHOTS = Path(os.environ.get("NB2CWL_SCREENSHOTS") or home / "screenshots")
    root = home / "root"
    root.mkdir()
    write_notebooks(root)
    _settings(home / "settings")
    proc, base = start_lab(home, root, TOKEN, home / "settings")
    yield {"base": base, "root": root, "log": home / "lab.log", "runs": home / "runs"}
    stop_lab(proc)


@pytest.fixture
def browser(chromium):
    """Debian's chromium (tests/engines/browser.py)."""
    return chromium


class Page:
    """A browser page on the app, with the console errors it logged."""

    def __init__(self, page, base: str) -> None:
        self.page = page
        self.base = base
        self.errors: list[str] = []
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}\n{e.stack}"))
        page.on("response", lambda r: r.status >= 400 and self.errors.append(
            f"HTTP {r.status} {r.request.method} {r.url}"))

    def open(self, path: str, app: str = "lab") -> None:
        # lab: a workspace of its own, reset, without the notebooks earlier tests opened. A
        # shared one raced: JupyterLab's server read the default workspace's file while the
        # page before was still writing it, and answered 500 ("Expecting value")
        url = (f"{self.base}/lab/workspaces/nb2cwl-{next(_WORKSPACES)}/tree/{path}"
               if app == "lab" else f"{self.base}/notebooks/{path}")
        query = "?reset&" if app == "lab" else "?"
        self.page.goto(f"{url}{query}token={TOKEN}")
        self.page.wait_for_function("() => !!window.jupyterapp", timeout=60_000)
        ok = self.page.evaluate(
            """async (path) => {
                const app = window.jupyterapp;
                await app.started;
                await app.restored;
                for (let i = 0; i < 600; i++) {
                    const w = app.shell.currentWidget;
                    if (w && w.context && w.context.path === path) {
                        await w.context.ready;
                        window.__nb2cwlPanel = w;  // the notebook under test
                        return true;
                    }
                    await new Promise(r => setTimeout(r, 100));
                }
                return false;
            }""", path)
        assert ok, f"{path} did not open"

    def js(self, script: str, arg=None):
        return self.page.evaluate(script, arg)

    def execute(self, command: str, args: dict | None = None):
        return self.js("([c, a]) => window.jupyterapp.commands.execute(c, a)",
                       [command, args or {}])

    def badges(self) -> list[dict]:
        return self.js("""() => [...window.__nb2cwlPanel.node
            .querySelectorAll('[data-testid=nb2cwl-badge]')]
            .map(b => ({cell: b.dataset.cellId, status: b.dataset.status, step: b.dataset.step,
                        stale: b.dataset.stale, text: b.textContent}))""")

    def code_cell_ids(self) -> list[str]:
        return self.js("""() => window.__nb2cwlPanel.content.widgets
            .filter(c => c.model.type === 'code').map(c => c.model.id)""")

    def watch_badges(self) -> None:
        """Record every status each badge goes through (window.__nb2cwlSeen)."""
        self.js("""() => {
            window.__nb2cwlSeen = {};
            const note = b => {
                const seen = (window.__nb2cwlSeen[b.dataset.cellId] ??= []);
                if (seen[seen.length - 1] !== b.dataset.status) seen.push(b.dataset.status);
            };
            window.__nb2cwlPanel.node
                .querySelectorAll('[data-testid=nb2cwl-badge]').forEach(note);
            new MutationObserver(ms => ms.forEach(m => {
                if (m.target.dataset && m.target.dataset.testid === 'nb2cwl-badge') note(m.target);
            })).observe(document.body, {subtree: true, attributes: true,
                                        attributeFilter: ['data-status']});
        }""")

    def seen(self) -> dict:
        return self.js("() => window.__nb2cwlSeen")

    def wait_run(self, run_id: str, statuses=("done",), timeout=RUN_TIMEOUT_MS) -> str:
        """Wait until the runs list shows the run with a final status; return it."""
        self.page.wait_for_function(
            """([id, final]) => {
                const item = document.querySelector(
                    `[data-testid=nb2cwl-run-item][data-run-id="${id}"]`);
                return item && final.includes(item.dataset.status);
            }""", arg=[run_id, ["done", "failed", "cancelled", "lost"]], timeout=timeout)
        status = self.page.get_attribute(
            f'[data-testid=nb2cwl-run-item][data-run-id="{run_id}"]', "data-status")
        assert status in statuses, (status, self.page.inner_text("[data-testid=nb2cwl-status]"))
        return status

    def outputs_text(self, cell_id: str) -> str:
        return self.js("""(id) => {
            const cell = window.__nb2cwlPanel.content.widgets
                .find(c => c.model.id === id);
            return cell.node.querySelector('.jp-OutputArea').innerText;
        }""", cell_id)

    def show_sidebar(self) -> None:
        self.js("() => window.jupyterapp.shell.activateById('nb2cwl-sidebar')")
        self.page.wait_for_selector("#nb2cwl-sidebar", state="visible")

    def shot(self, name: str) -> None:
        folder = SHOTS or Path(os.environ.get("NB2CWL_SCREENSHOTS")
                               or Path(tempfile.gettempdir()) / "nb2cwl-screenshots")
        folder.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(folder / f"{name}.png"))

    def assert_no_errors(self, allowed: tuple[str, ...] = ()) -> None:
        errors = [e for e in self.errors if not any(a in e for a in allowed)]
        if errors and os.environ.get("NB2CWL_E2E_ERRORS"):
            Path(os.environ["NB2CWL_E2E_ERRORS"]).write_text("\n\n".join(errors))
        assert not errors, errors


@pytest.fixture
def page(browser, lab):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    p = Page(context.new_page(), lab["base"])
    yield p
    context.close()


COMMANDS = ["nb2cwl:run-all", "nb2cwl:run-changed", "nb2cwl:run-selected", "nb2cwl:cancel",
            "nb2cwl:show-graph"]
TESTIDS = ["nb2cwl-notebook", "nb2cwl-deployment", "nb2cwl-run-all", "nb2cwl-run-changed",
           "nb2cwl-run-selected", "nb2cwl-cancel", "nb2cwl-show-graph", "nb2cwl-status",
           "nb2cwl-runs"]


def wait_badges(page: Page, n: int) -> None:
    """Every code cell has its badge, with its step (the graph answered)."""
    page.page.wait_for_function(
        """(n) => {
            const b = [...window.__nb2cwlPanel.node
                .querySelectorAll('[data-testid=nb2cwl-badge]')];
            return b.length === n && b.every(x => x.dataset.step);
        }""", arg=n, timeout=30_000)


def open_with_badges(page: Page, path: str) -> list[str]:
    """Open the notebook with the sidebar shown, once every code cell has its badge; the
    code cells' ids."""
    page.open(path)
    page.show_sidebar()
    ids = page.code_cell_ids()
    wait_badges(page, len(ids))
    return ids


def wait_badge(page: Page, cell_id: str, status: str, timeout: float = 30_000) -> None:
    """The cell's badge shows `status`."""
    page.page.wait_for_function(
        "([id, status]) => document.querySelector("
        "`[data-testid=nb2cwl-badge][data-cell-id='${id}']`)?.dataset.status === status",
        arg=[cell_id, status], timeout=timeout)


def _kernel_run(path: Path) -> nbformat.NotebookNode:
    """The notebook run top to bottom in a kernel (nbclient), as Jupyter's Run All."""
    notebook = nbformat.read(str(path), as_version=4)
    NotebookClient(notebook, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute(
        env=kernel_environment())
    return notebook


def _outputs(notebook: dict) -> list[list[dict]]:
    """Each code cell's outputs, as shown: type, stream and text, MIME data, error, count."""
    def text(value: object) -> object:
        return "".join(value) if isinstance(value, list) else value

    cells = []
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        cells.append([{key: ({m: text(v) for m, v in value.items()} if key == "data"
                             else text(value))
                       for key, value in output.items() if key != "metadata"}
                      for output in cell["outputs"]])
    return cells


# ---- the tests -------------------------------------------------------------------------


def test_lab_loads_sidebar_commands_badges(page, lab):
    page.open("demo.ipynb")
    page.show_sidebar()
    for testid in TESTIDS:
        assert page.page.locator(f"[data-testid={testid}]").count() == 1, testid
    for command in COMMANDS:
        assert page.js("(c) => window.jupyterapp.commands.hasCommand(c)", command), command
    assert page.page.inner_text("[data-testid=nb2cwl-notebook]") == "demo.ipynb"
    # deployments: local selected; unavailable ones disabled, with the reason as tooltip
    page.page.wait_for_function(
        "() => document.querySelector('[data-testid=nb2cwl-deployment]').value === 'local'")
    options = page.js("""() => [...document.querySelectorAll(
        '[data-testid=nb2cwl-deployment] option')].map(o => ({value: o.value,
        disabled: o.disabled, title: o.title}))""")
    assert page.page.input_value("[data-testid=nb2cwl-deployment]") == "local"
    assert any(o["value"] == "local" and not o["disabled"] for o in options)
    for o in options:
        if o["disabled"]:
            assert o["title"], o
    ids = page.code_cell_ids()
    wait_badges(page, len(ids))
    badges = page.badges()
    assert [b["cell"] for b in badges] == ids
    assert [b["step"] for b in badges] == ["step_first", "step_second", "step_third"]
    # no earlier run: every cell is stale, every step would run
    page.page.wait_for_function(
        "() => document.querySelector('[data-testid=nb2cwl-run-changed]').textContent"
        " === 'Run changed (3)'")
    assert all(b["stale"] == "true" for b in page.badges())
    # the badge sits above the input: it covers no code
    overlap = page.js("""() => [...document.querySelectorAll('[data-testid=nb2cwl-badge]')]
        .some(b => {
            const e = b.parentElement.querySelector('.jp-InputArea-editor');
            const r1 = b.getBoundingClientRect(), r2 = e.getBoundingClientRect();
            return r1.bottom > r2.top && r1.top < r2.bottom;
        })""")
    assert not overlap
    page.shot("lab-sidebar-badges")
    # the side panel follows the current notebook
    page.js("() => window.jupyterapp.commands.execute('docmanager:open', {path: 'slow.ipynb'})")
    page.page.wait_for_function(
        "() => document.querySelector('[data-testid=nb2cwl-notebook]').textContent"
        " === 'slow.ipynb'")
    page.js("() => window.jupyterapp.shell.activateById(window.__nb2cwlPanel.id)")
    page.page.wait_for_function(
        "() => document.querySelector('[data-testid=nb2cwl-notebook]').textContent"
        " === 'demo.ipynb'")
    page.assert_no_errors()


def test_run_all_streams_outputs(page, lab):
    nb_file = lab["root"] / "demo.ipynb"
    before = nb_file.read_bytes()
    ids = open_with_badges(page, "demo.ipynb")
    page.watch_badges()
    run_id = page.execute("nb2cwl:run-all", {"deployment": "local"})
    assert re.fullmatch(r"[A-Za-z0-9_.-]+", run_id)
    page.page.wait_for_selector(f'[data-testid=nb2cwl-run-item][data-run-id="{run_id}"]')
    page.wait_run(run_id)
    page.shot("lab-run-all-done")
    seen = page.seen()
    for cell in ids:
        statuses = seen[cell]
        assert statuses[-1] == "done", statuses
        assert "running" in statuses or "queued" in statuses, statuses
    # outputs, rich ones included, in the open notebook
    page.page.wait_for_function(
        "() => !!document.querySelector('.jp-OutputArea .nb2cwl-e2e-html')")
    assert "x is 21" in page.outputs_text(ids[0])
    assert "y is 42" in page.outputs_text(ids[1])
    assert page.page.inner_text(".jp-OutputArea .nb2cwl-e2e-html") == "y = 42"
    counts = page.js("""() => window.__nb2cwlPanel.content.widgets
        .filter(c => c.model.type === 'code').map(c => c.model.executionCount)""")
    assert all(isinstance(c, int) for c in counts), counts
    # every cell's outputs in the open notebook equal a top-to-bottom run's in a kernel
    shown = page.js("() => window.__nb2cwlPanel.context.model.toJSON()")
    assert _outputs(shown) == _outputs(_kernel_run(nb_file))
    # badges: step, where, status, elapsed
    text = page.badges()[0]["text"]
    assert re.search(r"step_first · local \(.+\) · done · \d+\.\d s", text), text
    # the runs list: deployment, start, duration, downloads with the token
    item = page.page.locator(f'[data-testid=nb2cwl-run-item][data-run-id="{run_id}"]')
    assert "local" in item.inner_text()
    for kind in ("cwl", "crate", "notebook", "logs"):
        href = item.locator(f"[data-testid=nb2cwl-download-{kind}]").get_attribute("href")
        assert href and f"/nb2cwl/api/runs/{run_id}/files/{kind}" in href, (kind, href)
        assert f"token={TOKEN}" in href
    # a download link works with the cookie/token the page has
    with page.page.expect_download() as download:
        item.locator("[data-testid=nb2cwl-download-notebook]").click()
    executed = json.loads(Path(download.value.path()).read_text())
    assert executed["cells"][1]["outputs"]
    assert "done" in page.page.inner_text("[data-testid=nb2cwl-status]")
    # the plan after the run: nothing is stale any more
    page.page.wait_for_function(
        "() => document.querySelector('[data-testid=nb2cwl-run-changed]').textContent"
        " === 'Run changed (0)'")
    assert all(b["stale"] == "false" for b in page.badges())
    # the source file was never written
    assert nb_file.read_bytes() == before
    page.assert_no_errors()


def test_edit_marks_stale_then_run_changed_reuses(page, lab):
    ids = open_with_badges(page, "demo.ipynb")
    # a finished run first (the previous test's, or a new one)
    page.page.wait_for_function(
        "() => /Run changed \\(\\d+\\)/.test(document.querySelector("
        "'[data-testid=nb2cwl-run-changed]').textContent)")
    if page.page.inner_text("[data-testid=nb2cwl-run-changed]") != "Run changed (0)":
        page.wait_run(page.execute("nb2cwl:run-all", {"deployment": "local"}))
        page.page.wait_for_function(
            "() => document.querySelector('[data-testid=nb2cwl-run-changed]').textContent"
            " === 'Run changed (0)'")
    assert all(b["stale"] == "false" for b in page.badges())
    # edit the second cell (not saved): it and the cell after it become stale
    page.js("""(id) => window.__nb2cwlPanel.content.widgets
        .find(c => c.model.id === id).model.sharedModel
        .setSource("y = x * 3\\nprint('y is', y)")""", ids[1])
    page.page.wait_for_function(
        """([a, b, c]) => {
            const s = id => document.querySelector(
                `[data-testid=nb2cwl-badge][data-cell-id="${id}"]`).dataset.stale;
            return s(a) === 'false' && s(b) === 'true' && s(c) === 'true';
        }""", arg=ids, timeout=15_000)
    assert page.page.inner_text("[data-testid=nb2cwl-run-changed]") == "Run changed (2)"
    statuses = {b["cell"]: b["status"] for b in page.badges()}
    assert statuses[ids[1]] == "stale" and statuses[ids[2]] == "stale", statuses
    page.shot("lab-stale-after-edit")
    page.watch_badges()
    # the side panel's button (its deployment: the picker's, local)
    previous = page.page.get_attribute("[data-testid=nb2cwl-run-item]", "data-run-id")
    page.page.click("[data-testid=nb2cwl-run-changed]")
    page.page.wait_for_function(
        """(id) => { const first = document.querySelector('[data-testid=nb2cwl-run-item]');
            return first && first.dataset.runId !== id; }""", arg=previous)
    run_id = page.page.get_attribute("[data-testid=nb2cwl-run-item]", "data-run-id")
    page.wait_run(run_id)
    assert "changed" in page.page.locator(
        f'[data-testid=nb2cwl-run-item][data-run-id="{run_id}"]').inner_text()
    seen = page.seen()
    assert seen[ids[0]][-1] == "cached", seen
    assert seen[ids[1]][-1] == "done" and seen[ids[2]][-1] == "done", seen
    page.page.wait_for_function(
        "() => document.querySelector('.jp-OutputArea .nb2cwl-e2e-html')?.textContent"
        " === 'y = 63'")
    assert "y is 63" in page.outputs_text(ids[1])
    assert "x is 21" in page.outputs_text(ids[0])  # reused, outputs kept
    page.page.wait_for_function(
        "() => document.querySelector('[data-testid=nb2cwl-run-changed]').textContent"
        " === 'Run changed (0)'")
    page.shot("lab-run-changed")
    # the file on disk still has the old source: the edit was never saved
    nb = nbformat.read(lab["root"] / "demo.ipynb", as_version=4)
    assert nb.cells[2].source.startswith("y = x * 2")
    page.assert_no_errors()


def test_run_selected_then_run_again(page, lab):
    ids = open_with_badges(page, "demo.ipynb")
    page.wait_run(page.execute("nb2cwl:run-all", {"deployment": "local"}))
    page.page.wait_for_function(
        "() => document.querySelector('[data-testid=nb2cwl-run-changed]').textContent"
        " === 'Run changed (0)'")
    # select the second code cell only (notebook index 2): it and the cell it needs run
    page.js("""() => { const nb = window.__nb2cwlPanel.content;
        nb.deselectAll(); nb.activeCellIndex = 2; }""")
    page.watch_badges()
    run_id = page.execute("nb2cwl:run-selected", {"deployment": "local"})
    page.wait_run(run_id)
    item = page.page.locator(f'[data-testid=nb2cwl-run-item][data-run-id="{run_id}"]')
    assert "selected" in item.inner_text()
    seen = page.seen()
    assert seen[ids[1]][-1] in ("done", "cached"), seen
    assert "running" not in seen.get(ids[2], []) and "queued" not in seen.get(ids[2], []), seen
    # the cell the run left alone keeps what the earlier run gave it
    assert seen[ids[2]][-1] == "done", seen
    # run again: same mode and deployment, a new run
    item.locator("[data-testid=nb2cwl-run-again]").click()
    page.page.wait_for_function(
        """(id) => { const first = document.querySelector('[data-testid=nb2cwl-run-item]');
            return first && first.dataset.runId !== id; }""", arg=run_id)
    again = page.page.get_attribute("[data-testid=nb2cwl-run-item]", "data-run-id")
    page.wait_run(again)
    assert "selected" in page.page.locator(
        f'[data-testid=nb2cwl-run-item][data-run-id="{again}"]').inner_text()
    page.shot("lab-run-selected-again")
    page.assert_no_errors()


def test_cancel_a_running_run(page, lab):
    ids = open_with_badges(page, "slow.ipynb")
    run_id = page.execute("nb2cwl:run-all", {"deployment": "local"})
    page.page.wait_for_selector(
        f'[data-testid=nb2cwl-badge][data-cell-id="{ids[1]}"][data-status=running]',
        timeout=RUN_TIMEOUT_MS)
    assert page.page.is_enabled("[data-testid=nb2cwl-cancel]")
    # outputs stream in while the run goes on (a clear_output replaced the first one); the
    # DOM may show them a moment after the next cell's badge (a loaded machine: CI)
    deadline = time.monotonic() + 10
    while page.outputs_text(ids[0]).strip() != "start" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert page.outputs_text(ids[0]).strip() == "start"
    assert page.page.is_enabled("[data-testid=nb2cwl-cancel]")  # the run goes on
    # a page opened mid-run shows the run so far
    page.open("slow.ipynb")
    page.show_sidebar()
    page.page.wait_for_selector(
        f'[data-testid=nb2cwl-badge][data-cell-id="{ids[1]}"][data-status=running]')
    page.page.wait_for_selector("[data-testid=nb2cwl-cancel]:not([disabled])")
    assert "step" in page.page.inner_text("[data-testid=nb2cwl-status]")
    page.shot("lab-cancel-running")
    started = time.monotonic()
    page.page.click("[data-testid=nb2cwl-cancel]")
    page.wait_run(run_id, statuses=("cancelled",), timeout=25_000)
    assert time.monotonic() - started < 25
    marker = f"{lab['runs'] / run_id / 'events.jsonl'}.steps"  # every process of the run
    deadline = time.monotonic() + 10
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_with(marker) == []
    page.page.wait_for_function(
        "() => ![...document.querySelectorAll('[data-testid=nb2cwl-badge]')]"
        ".some(b => b.dataset.status === 'running')")
    assert not page.page.is_enabled("[data-testid=nb2cwl-cancel]")
    assert "cancelled" in page.page.inner_text("[data-testid=nb2cwl-status]")
    page.shot("lab-cancelled")
    page.assert_no_errors()


def _badge_statuses(page: Page) -> dict[str, str]:
    return {b["cell"]: b["status"] for b in page.badges()}


def _prompt(page: Page, cell_id: str) -> str:
    """The cell's input prompt as JupyterLab shows it: `[3]:`, `[*]:` while it runs."""
    return page.js("""(id) => window.__nb2cwlPanel.content.widgets
        .find(c => c.model.id === id).node.querySelector('.jp-InputPrompt').textContent""",
                   arg=cell_id) or ""


def test_badges_after_a_cancel_tell_this_run_only(page, lab):
    """A run that finished, then one cancelled in its second cell: the first cell is done,
    the second cancelled (not skipped), the third never ran in this run (not the earlier
    run's done); the running cell showed Jupyter's [*] prompt."""
    ids = open_with_badges(page, "gated.ipynb")
    page.wait_run(page.execute("nb2cwl:run-all", {"deployment": "local"}))
    wait_badge(page, ids[2], "done")
    gate = lab["root"] / "gate"
    gate.touch()
    try:
        run_id = page.execute("nb2cwl:run-all", {"deployment": "local"})
        page.page.wait_for_selector(
            f'[data-testid=nb2cwl-badge][data-cell-id="{ids[1]}"][data-status=running]',
            timeout=RUN_TIMEOUT_MS)
        # the badge may turn running on the step's event, the prompt on the cell's, after it
        page.page.wait_for_function(
            """(id) => window.__nb2cwlPanel.content.widgets.find(c => c.model.id === id)
                .node.querySelector('.jp-InputPrompt').textContent.includes('*')""",
            arg=ids[1], timeout=10_000)
        page.shot("lab-running-prompt")
        page.page.click("[data-testid=nb2cwl-cancel]")
        page.wait_run(run_id, statuses=("cancelled",), timeout=25_000)
    finally:
        gate.unlink()
    wait_badge(page, ids[1], "cancelled")
    statuses = _badge_statuses(page)
    assert statuses == {ids[0]: "done", ids[1]: "cancelled", ids[2]: "skipped"}, statuses
    assert "*" not in _prompt(page, ids[1])
    page.shot("lab-badges-after-cancel")
    page.assert_no_errors()


def test_a_reopened_notebook_shows_badges_where_it_shows_the_run(browser, page, lab):
    """A run never writes the notebook. Opened again before it is saved, the notebook shows
    no results, so no badge says done; saved after the run, it shows them, and the badges
    say done again."""
    ids = open_with_badges(page, "reopened.ipynb")
    page.wait_run(page.execute("nb2cwl:run-all", {"deployment": "local"}))
    wait_badge(page, ids[-1], "done")

    def reopened() -> tuple[Page, object]:
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        other = Page(context.new_page(), lab["base"])
        open_with_badges(other, "reopened.ipynb")
        # the page follows the finished run: its status line says so
        other.page.wait_for_function(
            "() => document.querySelector('[data-testid=nb2cwl-status]')"
            ".textContent.includes('done')", timeout=30_000)
        return other, context

    other, context = reopened()
    try:
        assert set(_badge_statuses(other).values()) == {"idle"}, _badge_statuses(other)
        assert all("done" not in b["text"] for b in other.badges())
        other.shot("lab-reopened-unsaved")
        other.assert_no_errors()
    finally:
        context.close()
    page.execute("docmanager:save")
    nb_file = lab["root"] / "reopened.ipynb"
    deadline = time.monotonic() + 30
    while not nbformat.read(nb_file, 4).cells[-1].outputs and time.monotonic() < deadline:
        time.sleep(0.2)
    other, context = reopened()
    try:
        for cell in ids:
            wait_badge(other, cell, "done")
        other.assert_no_errors()
    finally:
        context.close()
    page.assert_no_errors()


def test_the_sidebar_says_why_the_cells_are_grouped(page, lab):
    page.open("fused_failing.ipynb")
    page.show_sidebar()
    wait_badges(page, len(page.code_cell_ids()))
    steps = page.page.locator("[data-testid=nb2cwl-steps]")
    steps.locator("summary").click()
    assert steps.locator("summary").inner_text() == "Steps: 1 step, and why"
    item = steps.locator(".nb2cwl-step-item")
    assert item.count() == 1
    text = item.inner_text()
    assert "cells_0_to_2 · In [1] to [3] · local" in text, text  # Jupyter's numbers
    reasons = item.locator(".nb2cwl-step-reason").all_inner_texts()
    assert len(reasons) == 1, reasons  # one reason: "; " inside it does not cut it
    assert reasons[0].startswith("fused 3 steps (In [1] to [3]): under 0.01 s of work with no "
                                 "independent heavy step beside it, so no boundary among them "
                                 "pays (one costs about 0.3 s; "), reasons
    page.shot("lab-steps-why")
    page.assert_no_errors()


def test_the_user_chooses_one_step_per_cell_in_the_sidebar(page, lab):
    """Issue 28 item 2: the granularity is chosen in the sidebar; the steps, their reasons,
    the badges and the run follow it."""
    ids = open_with_badges(page, "granular.ipynb")
    steps = page.page.locator("[data-testid=nb2cwl-steps]")
    assert steps.locator("summary").inner_text() == "Steps: 1 step, and why"
    assert page.page.input_value("[data-testid=nb2cwl-granularity]") == "auto"
    page.page.select_option("[data-testid=nb2cwl-granularity]", "cell")
    page.page.wait_for_function(
        "() => document.querySelector('[data-testid=nb2cwl-steps] summary').textContent"
        " === 'Steps: 3 steps, and why'", timeout=30_000)
    page.page.wait_for_function(
        """(ids) => ids.every((id, n) => document.querySelector(
            `[data-testid=nb2cwl-badge][data-cell-id="${id}"]`)?.dataset.step === `cell_${n}`)""",
        arg=ids, timeout=30_000)
    steps.locator("summary").click()
    texts = steps.locator(".nb2cwl-step-name").all_inner_texts()
    assert texts == ["cell_0 · In [1] · local", "cell_1 · In [2] · local",
                     "cell_2 · In [3] · local"], texts
    page.shot("lab-one-step-per-cell")
    run_id = page.execute("nb2cwl:run-all", {"deployment": "local"})
    page.wait_run(run_id)
    for cell_id in ids:
        wait_badge(page, cell_id, "done")
    assert [b["step"] for b in page.badges()] == ["cell_0", "cell_1", "cell_2"]
    assert page.outputs_text(ids[2]).strip() == "sum 5"
    with urllib.request.urlopen(f"{lab['base']}/nb2cwl/api/runs/{run_id}?token={TOKEN}",
                                timeout=10) as reply:
        detail = json.load(reply)
    assert detail["granularity"] == "cell" and sorted(detail["steps"]) == [
        "assemble", "cell_0", "cell_1", "cell_2"], detail
    # reopened, the notebook starts with the steps of its latest run
    open_with_badges(page, "granular.ipynb")
    page.page.wait_for_function(
        "() => document.querySelector('[data-testid=nb2cwl-granularity]').value === 'cell'"
        " && document.querySelector('[data-testid=nb2cwl-steps] summary').textContent"
        " === 'Steps: 3 steps, and why'", timeout=30_000)
    page.page.select_option("[data-testid=nb2cwl-granularity]", "auto")
    page.page.wait_for_function(
        "() => document.querySelector('[data-testid=nb2cwl-steps] summary').textContent"
        " === 'Steps: 1 step, and why'", timeout=30_000)
    # the run commands take the granularity as an argument too (the picker stays as it is)
    again = page.execute("nb2cwl:run-all", {"deployment": "local", "granularity": "cell"})
    page.wait_run(again)
    with urllib.request.urlopen(f"{lab['base']}/nb2cwl/api/runs/{again}?token={TOKEN}",
                                timeout=10) as reply:
        assert json.load(reply)["granularity"] == "cell"
    assert page.page.input_value("[data-testid=nb2cwl-granularity]") == "auto"
    page.assert_no_errors()


def test_a_failure_in_a_fused_step_skips_the_cells_after_it(page, lab):
    ids = open_with_badges(page, "fused_failing.ipynb")
    run_id = page.execute("nb2cwl:run-all", {"deployment": "local"})
    page.wait_run(run_id, statuses=("failed",))
    wait_badge(page, ids[1], "failed")
    statuses = _badge_statuses(page)
    assert statuses == {ids[0]: "done", ids[1]: "failed", ids[2]: "skipped"}, statuses
    page.assert_no_errors()


def test_graph_view_colours_and_selects(page, lab):
    page.open("demo.ipynb")
    ids = page.code_cell_ids()
    wait_badges(page, len(ids))
    page.execute("nb2cwl:show-graph")
    graph = page.page.locator("[data-testid=nb2cwl-graph]")
    graph.wait_for(state="visible")
    page.page.wait_for_selector("#nb2cwl-graph g.nb2cwl-node")
    nodes = page.js("""() => [...document.querySelectorAll('#nb2cwl-graph g.nb2cwl-node')]
        .map(n => n.getAttribute('data-step'))""")
    assert nodes == ["step_first", "step_second", "step_third"]
    labels = page.js("() => document.querySelector('#nb2cwl-graph .nb2cwl-graph-svg').textContent")
    assert "x" in labels and "y" in labels  # the values on the edges
    page.watch_badges()
    run_id = page.execute("nb2cwl:run-all", {"deployment": "local"})
    page.wait_run(run_id)
    page.page.wait_for_function(
        """() => [...document.querySelectorAll('#nb2cwl-graph g.nb2cwl-node')]
            .every(n => n.getAttribute('data-status') === 'done')""")
    # the executed notebook's box shows the last step's status: it is there now
    page.page.wait_for_selector(
        '#nb2cwl-graph g.output.nb2cwl-shows-status[data-status="done"]', timeout=10_000)
    # a legend says what the colours mean
    legend = page.page.locator("[data-testid=nb2cwl-graph-legend] .nb2cwl-graph-legend-item")
    assert legend.all_inner_texts() == ["idle", "queued", "running", "done", "cached",
                                        "failed", "cancelled", "skipped"]
    page.shot("lab-graph-done")
    page.page.click('#nb2cwl-graph g.nb2cwl-node[data-step="step_third"]')
    page.page.wait_for_function(
        "(id) => window.jupyterapp.shell.currentWidget?.content?.activeCell?.model.id === id",
        arg=ids[2])
    page.assert_no_errors()


def test_scatter_shows_shards(page, lab):
    ids = open_with_badges(page, "scatter.ipynb")
    page.execute("nb2cwl:show-graph")
    page.page.wait_for_selector("#nb2cwl-graph g.nb2cwl-node[data-step$=_map]")
    page.watch_badges()
    run_id = page.execute("nb2cwl:run-all", {"deployment": "local"})
    page.wait_run(run_id)
    # the badge ends on the map's shards, all done (drawn at the page's next refresh)
    page.page.wait_for_function(
        "() => /shard (\\d+)\\/\\1\\b/.test(document.querySelector("
        "'[data-testid=nb2cwl-badge]')?.textContent ?? '')", timeout=10_000)
    # the graph: shard progress on the map step only, all shards done (and still a scatter
    # when the graph is drawn again with the run's measured seconds: the notebook asked for it)
    progress = page.js("""() => [...document.querySelectorAll(
        '#nb2cwl-graph [data-testid=nb2cwl-shard-progress]')].map(t =>
        [t.parentElement.getAttribute('data-step'), t.textContent])""")
    assert len(progress) == 1 and progress[0][0].endswith("_map"), progress
    assert re.fullmatch(r"shard (\d+)/\1", progress[0][1]), progress
    assert "14" in page.outputs_text(ids[0])  # 0 + 1 + 4 + 9
    page.shot("lab-scatter-done")
    page.assert_no_errors()


def test_failed_run(page, lab):
    ids = open_with_badges(page, "failing.ipynb")
    page.watch_badges()
    run_id = page.execute("nb2cwl:run-all", {"deployment": "local"})
    page.wait_run(run_id, statuses=("failed",))
    wait_badge(page, ids[1], "failed")
    statuses = {b["cell"]: b["status"] for b in page.badges()}
    assert statuses[ids[0]] == "done", statuses
    assert statuses[ids[2]] in ("skipped", "idle"), statuses
    status = page.page.inner_text("[data-testid=nb2cwl-status]")
    assert "failed" in status and "ZeroDivisionError" in status, status
    item = page.page.locator(f'[data-testid=nb2cwl-run-item][data-run-id="{run_id}"]')
    assert "ZeroDivisionError" in item.locator("[data-testid=nb2cwl-run-error]").inner_text()
    page.page.wait_for_function(
        "(id) => window.__nb2cwlPanel.content.widgets.find(c => c.model.id === id)"
        ".node.querySelector('.jp-OutputArea').innerText.includes('ZeroDivisionError')",
        arg=ids[1])
    assert "before" in page.outputs_text(ids[0])
    page.shot("lab-failed-run")
    page.assert_no_errors()


def test_syntax_error_then_fixed(page, lab):
    page.open("broken.ipynb")
    page.show_sidebar()
    page.page.wait_for_function(
        "() => /SyntaxError/.test(document.querySelector('[data-testid=nb2cwl-status]')"
        ".textContent)")
    assert page.page.get_attribute("[data-testid=nb2cwl-status]", "data-state") == "error"
    # the deployments still list (without the ones the notebook would define)
    page.page.wait_for_function(
        "() => document.querySelector('[data-testid=nb2cwl-deployment]').value === 'local'")
    page.shot("lab-syntax-error")
    # fix it in the editor (not saved): the graph comes, the error goes
    page.js("""() => window.__nb2cwlPanel.content.widgets[0].model.sharedModel
        .setSource('x = (1)')""")
    ids = page.code_cell_ids()
    wait_badges(page, len(ids))
    page.page.wait_for_function(
        "() => document.querySelector('[data-testid=nb2cwl-status]').dataset.state !== 'error'")
    run_id = page.execute("nb2cwl:run-all", {"deployment": "local"})
    page.wait_run(run_id)
    page.page.wait_for_function(
        "(id) => window.__nb2cwlPanel.content.widgets.find(c => c.model.id === id)"
        ".node.querySelector('.jp-OutputArea').innerText.includes('1')", arg=ids[1])
    # the browser logs the 400 answers (the syntax error) itself
    page.assert_no_errors(allowed=("400",))


def test_badge_warnings(page, lab):
    page.open("warnings.ipynb")
    ids = page.code_cell_ids()
    wait_badges(page, len(ids))
    warnings = page.js("""() => [...window.__nb2cwlPanel.node.querySelectorAll(
        '[data-testid=nb2cwl-badge]')].map(b => {
            const w = b.querySelector('[data-testid=nb2cwl-warning]');
            return w ? w.title : null; })""")
    assert "break" in warnings[0], warnings
    assert "random" in warnings[1], warnings
    assert warnings[2] is None, warnings
    page.page.hover(f'[data-testid=nb2cwl-badge][data-cell-id="{ids[0]}"] '
                    '[data-testid=nb2cwl-warning]')
    page.shot("lab-badge-warnings")
    page.assert_no_errors()


# Notebook 7.6.5's notebook page logs these itself, with or without nb2cwl installed (the
# second after JupyterLab saved a workspace: its file browser restore calls a command the
# notebook page lacks)
NOTEBOOK7_OWN_ERRORS = ("Cannot read properties of undefined (reading 'schema')",
                        "Command 'filebrowser:open-path' not registered")


def test_notebook7_page(page, lab):
    page.open("demo.ipynb", app="notebook")
    for command in COMMANDS:
        assert page.js("(c) => window.jupyterapp.commands.hasCommand(c)", command), command
    assert page.page.locator("#nb2cwl-sidebar").count() == 1
    page.show_sidebar()
    ids = page.code_cell_ids()
    wait_badges(page, len(ids))
    assert page.page.inner_text("[data-testid=nb2cwl-notebook]") == "demo.ipynb"
    page.shot("notebook7-sidebar-badges")
    page.execute("nb2cwl:show-graph")
    page.page.wait_for_selector("#nb2cwl-graph g.nb2cwl-node", state="visible")
    # a run, live, in Notebook 7 too
    page.watch_badges()
    run_id = page.execute("nb2cwl:run-all", {"deployment": "local"})
    page.wait_run(run_id)
    page.page.wait_for_function(
        "() => !!document.querySelector('.jp-OutputArea .nb2cwl-e2e-html')")
    assert all(seen[-1] == "done" for seen in page.seen().values()), page.seen()
    page.page.wait_for_function(
        """() => [...document.querySelectorAll('#nb2cwl-graph g.nb2cwl-node')]
            .every(n => n.getAttribute('data-status') === 'done')""")
    page.shot("notebook7-graph")
    page.assert_no_errors(allowed=NOTEBOOK7_OWN_ERRORS)


def test_server_extension_missing(browser, tmp_path):
    """Without the server extension the side panel shows the error; nothing else breaks."""
    root = tmp_path / "root"
    root.mkdir()
    write_notebooks(root)
    _settings(tmp_path / "settings")
    port = _free_port()
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),  # the front end, and no server
               JUPYTER_PATH=jupyter_paths_in(tmp_path)["JUPYTER_PATH"])  # extension config
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
         "--ip=127.0.0.1", f"--port={port}", f"--IdentityProvider.token={TOKEN}",
         "--LabApp.extension_manager=readonly", "--LabApp.expose_app_in_browser=True",
         f"--ServerApp.root_dir={root}",
         "--ServerApp.jpserver_extensions=nb2cwl.integrations.server=False"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
        start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.3)
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        p = Page(context.new_page(), base)
        p.open("demo.ipynb")
        p.show_sidebar()
        p.page.wait_for_function(
            "() => document.querySelector('[data-testid=nb2cwl-status]')"
            ".dataset.state === 'error'")
        assert "unavailable" in p.page.inner_text("[data-testid=nb2cwl-status]")
        assert p.page.is_visible("[data-testid=nb2cwl-retry]")
        assert p.js("(c) => window.jupyterapp.commands.hasCommand(c)", "nb2cwl:run-all")
        assert not p.page.is_enabled("[data-testid=nb2cwl-run-all]")
        assert p.page.locator("[data-testid=nb2cwl-badge]").count() == 0
        # the rest of the app still works: the notebook's kernel runs a cell
        p.js("""async () => {
            const panel = window.__nb2cwlPanel;
            await panel.sessionContext.ready;
            panel.content.activeCellIndex = 1;
            await window.jupyterapp.commands.execute('notebook:run-cell');
        }""")
        p.page.wait_for_function(
            "() => window.__nb2cwlPanel.content.widgets[1].node"
            ".querySelector('.jp-OutputArea').innerText.includes('x is 21')",
            timeout=60_000)
        p.shot("lab-no-server-extension")
        # the only errors are the failed requests to the missing endpoints
        p.assert_no_errors(allowed=("404", "Not Found"))
        context.close()
    finally:
        stop_lab(proc)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-v", *sys.argv[1:]]))



def test_nb2cwl_is_where_users_look_for_a_run(page, lab):
    """The Run menu, the cells' context menu and a shortcut in JupyterLab (in Notebook 7,
    where the panel has no tab, a toolbar button shows it: the next test)."""
    ids = open_with_badges(page, "demo.ipynb")
    page.page.click(".lm-MenuBar-item:has-text('Run')")
    page.page.wait_for_selector(".lm-Menu-item:has-text('Run All Steps (nb2cwl)')")
    for label in ("Run Changed Steps", "Run Selected Cells as Steps (nb2cwl)",
                  "Cancel the Run (nb2cwl)"):
        assert page.page.locator(f".lm-Menu-item:has-text('{label}')").count() >= 1, label
    page.shot("lab-run-menu")
    page.page.keyboard.press("Escape")
    page.page.click(".lm-MenuBar-item:has-text('View')")
    page.page.wait_for_selector(".lm-Menu-item:has-text('Show the Step Graph (nb2cwl)')")
    assert page.page.locator(".lm-Menu-itemLabel:text-is('nb2cwl')").count() == 1
    page.page.keyboard.press("Escape")
    cell = page.page.locator(
        f".jp-Cell:has([data-testid=nb2cwl-badge][data-cell-id='{ids[0]}']) .jp-InputArea")
    cell.click(button="right")
    page.page.wait_for_selector(".lm-Menu-item:has-text('Run Selected Cells as Steps (nb2cwl)')")
    page.shot("lab-cell-context-menu")
    page.page.keyboard.press("Escape")
    # the shortcut, in command mode on the notebook
    page.page.keyboard.press("Escape")
    cell.click()
    page.page.keyboard.press("Escape")
    page.watch_badges()
    page.page.keyboard.press("Alt+Shift+R")
    wait_badge(page, ids[-1], "done", timeout=RUN_TIMEOUT_MS)
    page.assert_no_errors()


def test_notebook7_shows_the_panel_from_the_toolbar(page, lab):
    page.open("demo.ipynb", app="notebook")
    button = page.page.locator("[data-jp-item-name=nb2cwl]")
    button.wait_for(state="visible")
    button.click()
    page.page.wait_for_selector("#nb2cwl-sidebar", state="visible")
    page.shot("notebook7-toolbar-panel")
    page.assert_no_errors(allowed=NOTEBOOK7_OWN_ERRORS)
