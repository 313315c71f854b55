"""How many of a folder's runs (`OUT/runs/<n>`) are kept: all, unless the user sets a number.

Every `nb2cwl run` writes a new `OUT/runs/<n>` (its executed notebook, written files, log
and provenance) and never replaces an earlier one, so the folder grows by a run's outputs
each time. `--keep-runs N` (or `$NB2CWL_KEEP_RUNS`) removes the oldest runs beyond the newest
N when a run ends. The step cache is apart from them (`--cache-limit`).
"""

from __future__ import annotations

import os
import shutil

ENV = "NB2CWL_KEEP_RUNS"


def parse_keep(text: str) -> int:
    """A number of runs to keep, at least 1; ValueError with the reason otherwise."""
    try:
        keep = int(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a whole number of runs") from None
    if keep < 1:
        raise ValueError(f"{keep}: keep at least the run just made (1)")
    return keep


def prune_runs(out_dir: str, keep: int | None) -> list[str]:
    """Remove the oldest `OUT/runs/<n>` beyond the newest `keep` (None: keep all); the
    folders removed."""
    if keep is None:
        return []
    runs = os.path.join(out_dir, "runs")
    try:
        numbered = sorted(int(name) for name in os.listdir(runs) if name.isdigit())
    except OSError:
        return []
    removed = []
    for number in numbered[:-keep]:
        path = os.path.join(runs, str(number))
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed
