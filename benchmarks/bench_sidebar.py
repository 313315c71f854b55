"""Two independent heavy cells from JupyterLab's sidebar vs the kernel's Run All (issue 24).

A real `jupyter lab` with nb2cwl's extensions (as the browser tests start it) and Debian's
chromium driven by Playwright (the tests' tooling, tests/engines/browser.py). The notebook has
two independent cells of about `--seconds` each (a pure-Python prime count and a Monte-Carlo
estimate, sized on this machine first). In one browser session, on one server:

- the kernel's Run All (`notebook:run-all-cells`, the kernel already started, as a user who
  has the notebook open has it): from the command until every cell has run;
- the sidebar's Run all (`nb2cwl:run-all`, the server's standby ready, as it is once the
  server has started): from the command until the run is done, and when its first step started.

Target: the sidebar's run at most 0.65x of the kernel's Run All; its first step within 0.5 s.

Usage: python benchmarks/bench_sidebar.py [--seconds S]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from engines.browser import CHROMIUM_ARGS  # noqa: E402
from in_jupyter.jupyter_helpers import start_lab, stop_lab  # noqa: E402

TOKEN = "nb2cwl-bench"


def _primes(limit: int) -> int:
    return sum(1 for n in range(2, limit) if all(n % d for d in range(2, int(n ** 0.5) + 1)))


def _monte_carlo(draws: int) -> float:
    g = random.Random(7)
    return 4 * sum(1 for _ in range(draws) if g.random() ** 2 + g.random() ** 2 <= 1) / draws


def _sized(seconds: float) -> tuple[int, int]:
    """The prime limit and the draws that take about `seconds` each here."""
    started = time.perf_counter()
    _primes(60_000)
    primes = int(60_000 * (seconds / (time.perf_counter() - started)) ** (1 / 1.4))
    started = time.perf_counter()
    _monte_carlo(400_000)
    draws = int(400_000 * seconds / (time.perf_counter() - started))
    return primes, draws


def _notebook(path: Path, limit: int, draws: int) -> None:
    cells = ["import math\nimport random",
             f"count = sum(1 for n in range(2, {limit}) if all(n % d for d in range(2, "
             "math.isqrt(n) + 1)))\nprint('primes:', count)",
             f"g = random.Random(7)\nhits = sum(1 for _ in range({draws}) "
             "if g.random() ** 2 + g.random() ** 2 <= 1)\n"
             f"print('pi is about', round(4 * hits / {draws}, 3))"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, path)


_OPEN = """async (path) => {
    const app = window.jupyterapp;
    await app.started; await app.restored;
    for (let i = 0; i < 600; i++) {
        const w = app.shell.currentWidget;
        if (w && w.context && w.context.path === path) {
            await w.context.ready; await w.sessionContext.ready;
            window.__panel = w; return true;
        }
        await new Promise(r => setTimeout(r, 100));
    }
    return false;
}"""
_KERNEL_RUN_ALL = """async () => {
    const app = window.jupyterapp, panel = window.__panel;
    const kernel = panel.sessionContext.session.kernel;
    while (kernel.status !== 'idle') await new Promise(r => setTimeout(r, 50));
    const started = performance.now();
    await app.commands.execute('notebook:run-all-cells');
    const cells = () => panel.content.widgets.filter(c => c.model.type === 'code');
    while (!(kernel.status === 'idle'
             && cells().every(c => c.model.executionCount !== null))) {
        await new Promise(r => setTimeout(r, 20));
    }
    return (performance.now() - started) / 1000;
}"""
_SIDEBAR_RUN_ALL = """async (path) => {
    // The run's end as the sidebar learns it: its last event on the server's event bus
    // (polling the runs' list instead would load the server while the cells run).
    const app = window.jupyterapp, bus = app.serviceManager.events;
    const ended = new Promise(resolve => {
        const seen = (_, e) => {
            if (e.path === path && e.kind === 'run'
                    && ['done', 'failed', 'cancelled'].includes(e.status)) {
                bus.stream.disconnect(seen);
                resolve([performance.now(), e.run, e.status]);
            }
        };
        bus.stream.connect(seen);
    });
    const started = performance.now(), wall = Date.now() / 1000;
    await app.commands.execute('nb2cwl:run-all');
    const [end, run, status] = await Promise.race([ended, new Promise((_, reject) =>
        setTimeout(() => reject(new Error('no end of the run within 600 s')), 600000))]);
    return [(end - started) / 1000, run, status, wall];
}"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0,
                        help="about how long each heavy cell runs here (default 5)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    limit, draws = _sized(args.seconds)
    home = Path(tempfile.mkdtemp(prefix="nb2cwl-bench-sidebar-"))
    (home / "root").mkdir()
    _notebook(home / "root" / "two_cells.ipynb", limit, draws)
    server, base = start_lab(home, home / "root", TOKEN)
    try:
        time.sleep(10)  # the server's standby gets ready (nb2cwl imported, StreamFlow started)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=shutil.which("chromium") or "/usr/bin/chromium", headless=True,
                args=CHROMIUM_ARGS)
            page = browser.new_page()
            page.goto(f"{base}/lab/tree/two_cells.ipynb?reset&token={TOKEN}")
            page.wait_for_function("() => !!window.jupyterapp", timeout=90_000)
            assert page.evaluate(_OPEN, "two_cells.ipynb"), "the notebook did not open"
            kernel = page.evaluate(_KERNEL_RUN_ALL)
            sidebar, run_id, status, asked = page.evaluate(_SIDEBAR_RUN_ALL, "two_cells.ipynb")
            browser.close()
    finally:
        stop_lab(server)
    events = [json.loads(line) for line in
              (home / "runs" / run_id / "events.jsonl").read_text().splitlines()]
    first = min(e["time"] for e in events
                if e.get("kind") == "step" and e.get("status") == "running")
    steps = {e["step"] for e in events if e.get("kind") == "step" and "step" in e}
    ratio = sidebar / kernel
    print(f"two independent cells of about {args.seconds:g} s each (primes below {limit}, "
          f"{draws} draws)")
    print(f"kernel Run All: {kernel:.2f} s; sidebar Run all: {sidebar:.2f} s ({status}, "
          f"{len(steps)} steps); ratio {ratio:.2f} (target <= 0.65) "
          f"{'pass' if ratio <= 0.65 else 'FAIL'}")
    start = first - asked
    print(f"first step running {start:.2f} s after the click (target <= 0.5) "
          f"{'pass' if start <= 0.5 else 'FAIL'}")
    print("the run's timeline, seconds after the click:")
    for e in events:
        if e.get("kind") in ("step", "run") and e.get("status") != "queued":
            print(f"  {e['time'] - asked:6.2f}  {e.get('step', 'run')} {e.get('status')}")
    shutil.rmtree(home, ignore_errors=True)
    return 0 if status == "done" and ratio <= 0.65 else 1


if __name__ == "__main__":
    raise SystemExit(main())
