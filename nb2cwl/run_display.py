"""What `nb2cwl run` shows while the workflow runs: a line per step as it ends (done, reused,
failed, skipped) and, on a terminal, a live bar below them with the steps running, where,
and for how long (rich). Piped output stays plain lines."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from typing import Any


class RunDisplay:
    """The run's progress on stdout; `live` (a terminal) adds rich's bar."""

    def __init__(self, total: int, live: bool) -> None:
        self.total = total
        self._progress: Any = None
        self._shown = 0.0
        self._began = False  # a step has run
        if live:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                      MofNCompleteColumn(), TimeElapsedColumn(),
                                      transient=True)
            self._task = self._progress.add_task("starting", total=total)
            self._progress.start()

    def line(self, text: str) -> None:
        """A line that stays (above the bar, on a terminal)."""
        if self._progress is not None:
            self._progress.console.print(text, highlight=False, markup=False)
        else:
            print(text, flush=True)

    def update(self, done: int, running: Mapping[str, tuple[str, float, int]]) -> None:
        """The steps done so far, and those running: step -> (where, since, jobs)."""
        self._began = self._began or bool(running)  # a step ends a moment before it counts
        if self._progress is None or time.monotonic() - self._shown < 0.1:
            return
        self._shown = time.monotonic()
        now = time.time()
        parts = [f"{step}{f' x{jobs}' if jobs > 1 else ''} on {where or 'local'} "
                 f"{now - since:.0f} s" for step, (where, since, jobs) in sorted(running.items())]
        waiting = "waiting for the next step" if done or self._began else "starting the workflow"
        self._progress.update(self._task, completed=done,
                              description=("running " + ", ".join(parts)) if parts else waiting)

    def close(self) -> None:
        """The run ended: the bar goes, the lines stay."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def live_display_wanted(quiet: bool) -> bool:
    """A live bar only on a terminal, and not with --quiet."""
    return not quiet and sys.stdout.isatty()
