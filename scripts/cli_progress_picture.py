"""Picture `nb2cwl run`'s live progress on a terminal, for the docs (docs/images/cli-progress.svg).

Runs `nb2cwl run NOTEBOOK` in a pseudo-terminal, as a user's terminal runs it, and keeps what
the screen shows at the first moment a step runs as several jobs side by side (a scattered
loop's chunks): the lines of the steps done so far and rich's live bar below them. rich itself
draws the SVG (Console.save_svg), from the terminal's own colours.

    python scripts/cli_progress_picture.py notebooks/example.ipynb docs/images/cli-progress.svg
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
import time

from rich.console import Console
from rich.text import Text

COLUMNS, ROWS = 100, 30
#: rich's live bar redraws its line with a carriage return and "erase line"
_REDRAW = re.compile(r"\r\x1b\[2K")
#: the codes of a frame that are not colours: cursor shown, hidden or moved
_CONTROL = re.compile(r"\x1b\[\?25[lh]|\x1b\[\d*[ABCDG]")


def terminal_output(notebook: str, timeout: float = 300) -> str:
    """Everything `nb2cwl run notebook` writes to a pseudo-terminal, colour codes and
    redraws included (run in a scratch folder, on a copy)."""
    work = tempfile.mkdtemp(prefix="nb2cwl-picture-")
    try:
        copy = os.path.join(work, os.path.basename(notebook))
        shutil.copyfile(notebook, copy)
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(COLUMNS)}
        command = [sys.executable, "-m", "nb2cwl", "run", os.path.basename(copy), "-o", "wf",
                   "--no-cache"]
        process = subprocess.Popen(command, cwd=work, stdin=slave, stdout=slave, stderr=slave,
                                   env=env, close_fds=True)
        os.close(slave)
        stream = b""
        end = time.monotonic() + timeout
        while time.monotonic() < end:  # read to the end: a full terminal would stop the run
            ready, _, _ = select.select([master], [], [], 0.1)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                stream += os.read(master, 65536)
            except OSError:  # the run ended and closed the terminal
                break
        if process.poll() is None:  # out of time: stop the run before its folder goes
            process.kill()
        process.wait()
        os.close(master)
        return stream.decode("utf-8", "replace")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def screens(stream: str) -> list[tuple[list[str], str]]:
    """What the terminal showed at each redraw of the live line: (finished lines, live line),
    with their colour codes."""
    return [_screen(stream[:match.start()]) for match in _REDRAW.finditer(stream)]


def screen_when(stream: str, wanted: re.Pattern[str]) -> list[str]:
    """The screen's lines at the first moment its live line matches `wanted`."""
    for lines, live in screens(stream):
        if wanted.search(_plain(live)):
            return [*lines, live]
    raise SystemExit(f"the run never showed {wanted.pattern!r}; it printed:\n"
                     + _plain(stream.replace("\r", "\n")))


def _screen(stream: str) -> tuple[list[str], str]:
    """The finished lines and the live line of what a terminal shows after `stream`."""
    lines = stream.replace("\r\n", "\n").split("\n")
    finished, live = lines[:-1], lines[-1]
    finished = [_REDRAW.split(line)[-1] for line in finished]  # what stayed of a redrawn line
    live = _REDRAW.split(live)[-1]
    return [_CONTROL.sub("", line) for line in finished], _CONTROL.sub("", live)


def _plain(line: str) -> str:
    """`line` without its colour codes."""
    return re.sub(r"\x1b\[[0-9;]*m", "", line)


def picture(lines: list[str], title: str, path: str) -> None:
    """The lines, coloured as the terminal showed them, as an SVG drawn by rich."""
    console = Console(record=True, width=COLUMNS, force_terminal=True, color_system="256",
                      file=open(os.devnull, "w"))  # noqa: SIM115 (recorded, not shown)
    for line in lines:
        console.print(Text.from_ansi(line), crop=True, overflow="crop", no_wrap=True)
    console.print()  # the SVG clips its last row's underscores: the cursor's line is blank
    svg = console.export_svg(title=title)
    # rich's template also names web fonts by URL: keep the fonts installed here, fetch nothing
    svg = re.sub(r',\s*url\("https?://[^"]*"\) format\("[^"]*"\)', "", svg)
    with open(path, "w", encoding="utf-8") as out:
        out.write(svg)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook")
    parser.add_argument("svg")
    parser.add_argument("--when", default=r"running \S+ x\d+ on \S+.* [1-9]\d* s",
                        help="a regular expression the live line must match (default: a step "
                             "running as several jobs, for a second or more)")
    args = parser.parse_args()
    lines = screen_when(terminal_output(args.notebook), re.compile(args.when))
    name = os.path.basename(args.notebook)
    picture([f"$ nb2cwl run {name} -o wf", *lines], f"nb2cwl run {name}", args.svg)
    print(f"wrote {args.svg}: " + " | ".join(_plain(line) for line in lines[-3:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
