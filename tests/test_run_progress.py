"""What `nb2cwl run` shows while it runs (issue 26, item 5): a line per step as it ends, with
what happened to it (done, reused, failed, skipped); on a terminal, a live bar with the steps
running and where; piped, plain lines only."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from deployment_cases import write_notebook

pytestmark = pytest.mark.streamflow

CELLS = ["x = 1\nprint('a')",
         ("import time\ntime.sleep(1)\ny = x + 1\nprint(y)", {"tags": ["nb2cwl:step=two"]}),
         ("z = y / 0", {"tags": ["nb2cwl:step=three"]}),
         ("print('after', z)", {"tags": ["nb2cwl:step=four"]})]


def _lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stdout.splitlines() if line.startswith("[")]


def test_each_step_says_what_happened_to_it(tmp_path: Path) -> None:
    notebook = write_notebook(tmp_path / "nb.ipynb", *CELLS)
    command = [sys.executable, "-m", "nb2cwl", "run", str(notebook), "-o", str(tmp_path / "wf")]
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    first = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert first.returncode == 1
    assert _lines(first) == ["[1/5] cell_0 done (In [1])", "[2/5] step_two done (In [2])",
                             "[3/5] step_three failed (In [3])",
                             "[4/5] step_four skipped (In [4])", "[5/5] assemble done"]
    assert "\x1b" not in first.stdout  # piped: plain lines, no bar
    data = json.loads(notebook.read_text())
    data["cells"][2]["source"] = "z = y / 1"
    notebook.write_text(json.dumps(data))
    again = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert again.returncode == 0, again.stderr
    assert _lines(again)[:4] == ["[1/5] cell_0 reused (In [1])", "[2/5] step_two reused (In [2])",
                                 "[3/5] step_three done (In [3])", "[4/5] step_four done (In [4])"]
    assert not list((tmp_path / "tmp").glob("nb2cwl-events-*"))  # the private events went


def test_a_terminal_gets_a_live_bar_with_the_running_steps(tmp_path: Path) -> None:
    notebook = write_notebook(tmp_path / "nb.ipynb", *CELLS[:2])
    main, child = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "nb2cwl", "run", str(notebook), "-o",
                                str(tmp_path / "wf")], stdin=child, stdout=child,
                               stderr=child, env=dict(os.environ, COLUMNS="160", TERM="xterm"))
    os.close(child)
    shown = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the other end closed: the run ended
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    assert process.wait(60) == 0, shown[-3000:]
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.decode(errors="replace"))
    assert "━" in text  # rich's bar
    assert re.search(r"running step_two on local \(\S+\) \d+ s", text), text[-3000:]
    assert "[2/3] step_two done (In [2])" in text and "finished in" in text
