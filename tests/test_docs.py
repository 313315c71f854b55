"""The documentation stays true: the site (docs/, Sphinx) builds with warnings as errors
(its links and anchors checked), the README's links resolve, every nb2cwl command the docs
show is one the CLI accepts, the README's worked example runs as shown, and the step graph
pictured is the one `nb2cwl graph` draws today."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nb2cwl.cli_parser import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
ENV = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}


def _code_blocks(text: str, language: str = "bash") -> list[str]:
    """The fenced blocks of `text` in `language` ("" for those without one)."""
    blocks: list[str] = []
    opened: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("```"):
            if opened is None:
                opened, lines = line[3:].strip(), []
            else:
                if opened == language:
                    blocks.append("\n".join(lines))
                opened = None
        elif opened is not None:
            lines.append(line)
    return blocks


def _commands(block: str) -> list[str]:
    """The nb2cwl command lines of a shell block, without their comments."""
    found = []
    for line in block.splitlines():
        line = line.split(" #", 1)[0].strip()
        if line.startswith("nb2cwl "):
            found.append(line)
    return found


def test_the_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    """Sphinx with MyST, -W -n: a link to a page or heading that is not there, an image
    missing, a page left out of the contents: each is a warning, hence an error."""
    site = tmp_path / "html"
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q",
                           "-b", "html", str(DOCS), str(site)], cwd=ROOT, capture_output=True,
                          text=True, env=ENV, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    built = {p.name for p in site.glob("*.html")}
    assert {f"{page.stem}.html" for page in DOCS.glob("*.md")} <= built
    assert (site / "_images" / "example-graph.svg").exists()


def test_the_readme_links_resolve() -> None:
    text = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert links
    for link in links:
        if link.startswith(("http:", "https:", "#")):
            continue
        assert (ROOT / link.split("#")[0]).exists(), link


def _documented_commands() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        for block in _code_blocks(page.read_text()):
            found += [(page.name, line) for line in _commands(block)]
    return found


def test_every_command_the_docs_show_is_one_the_cli_accepts() -> None:
    commands = _documented_commands()
    assert len(commands) > 20
    parser = build_parser()
    for page, line in commands:
        if "COMMAND" in line or "..." in line:
            continue  # a pattern, not a command
        argv = shlex.split(line.replace("[", " ").replace("]", " "))[1:]
        if argv and argv[0] not in COMMANDS and not argv[0].startswith("-"):
            argv.insert(0, "compile")
        try:
            parser.parse_args(argv)
        except SystemExit as exc:
            if exc.code:
                pytest.fail(f"{page}: `{line}` is not a command nb2cwl accepts")


def _worked_example() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("## A worked example", 1)[1]
    return section


@pytest.mark.streamflow
def test_the_readme_worked_example_runs_as_shown(tmp_path: Path) -> None:
    section = _worked_example()
    commands = _commands(_code_blocks(section)[0])
    assert [c.split()[1] for c in commands] == ["explain", "run", "check"]
    (tmp_path / "notebooks").mkdir()
    shutil.copy(ROOT / "notebooks" / "example.ipynb", tmp_path / "notebooks")
    outputs = []
    for line in commands:
        done = subprocess.run([sys.executable, "-m", "nb2cwl", *shlex.split(line)[1:]],
                              cwd=tmp_path, capture_output=True, text=True, env=ENV,
                              timeout=600)
        assert done.returncode == 0, f"{line}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        outputs.append(done.stdout)
    shown = _code_blocks(section, "")[0].splitlines()
    printed = outputs[1].splitlines()
    # the lines the README shows, times aside, are the lines the run printed
    for line in shown:
        if "finished in" in line:
            continue
        assert line in printed, (line, printed)
    assert "every cell" in outputs[2] or "equal" in outputs[2], outputs[2][-2000:]


def test_the_pictured_step_graph_is_the_one_nb2cwl_draws(tmp_path: Path) -> None:
    (tmp_path / "notebooks").mkdir()
    shutil.copy(ROOT / "notebooks" / "example.ipynb", tmp_path / "notebooks")
    drawn = tmp_path / "example.svg"
    done = subprocess.run([sys.executable, "-m", "nb2cwl", "graph", "notebooks/example.ipynb",
                           "-o", str(drawn)], cwd=tmp_path, capture_output=True, text=True,
                          env=ENV, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    pictured = DOCS / "images" / "example-graph.svg"
    assert drawn.read_text() == pictured.read_text(), (
        "docs/images/example-graph.svg is out of date: python -m nb2cwl graph "
        "notebooks/example.ipynb -o docs/images/example-graph.svg (from an empty "
        "notebooks/example-wf)")


@pytest.mark.streamflow
def test_the_run_progress_pictured_is_what_a_terminal_shows(tmp_path: Path) -> None:
    """scripts/cli_progress_picture.py runs the example on a pseudo-terminal: the live line
    names the scattered loop's chunks running side by side, never goes back to "starting"
    once a step ran, and the lines that stay say what happened to each step. The picture in
    the docs is such a screen, and fetches nothing."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "cli_progress_picture", ROOT / "scripts" / "cli_progress_picture.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    stream = script.terminal_output(str(ROOT / "notebooks" / "example.ipynb"))
    lives = [script._plain(live) for _, live in script.screens(stream)]
    ran = next(n for n, live in enumerate(lives) if live.startswith("running "))
    assert not [live for live in lives[ran:] if live.startswith("starting")], lives
    assert any(re.match(r"running cell_\d+_map x2 on local", live) for live in lives), lives
    final = script._plain(stream.replace("\r\n", "\n"))
    for line in ("[1/4] cell_9_split done (In [1] to [5])", "[4/4] assemble done",
                 "finished in"):
        assert line in final, final[-2000:]
    lines = script.screen_when(stream, re.compile(r"running \S+ x2 on local"))
    script.picture(lines, "nb2cwl run example.ipynb", str(tmp_path / "progress.svg"))
    drawn = (tmp_path / "progress.svg").read_text()
    assert "cell_9_map" in drawn and 'url("http' not in drawn
    pictured = (DOCS / "images" / "cli-progress.svg").read_text()
    assert "running&#160;cell_9_map&#160;x2&#160;on&#160;local" in pictured
    assert 'url("http' not in pictured  # no web font: the picture fetches nothing
