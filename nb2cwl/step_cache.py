"""The step cache of an output folder, as its user sees it: entries, sizes, last use, pruning.

Each output folder has its own cache, `OUT/.nb2cwl-cache`: one folder per step run, named by
the digest of the step's code and inputs (nb2cwl.runtime.cache), holding the step's outputs
(`out/`) and the digests of its files (`complete`, written last). An entry's last use is its
folder's modification time: set when it is kept, and again each time a run reuses it.

Everything in the cache can be deleted at any time no run is going: a step whose entry is gone
runs again. `nb2cwl cache` takes the folder's run lock before it deletes anything, so it never
removes an entry a run is reading or writing.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass

CACHE_DIR = ".nb2cwl-cache"
LIMIT_ENV = "NB2CWL_CACHE_LIMIT"  # the size limit `nb2cwl run` applies when it ends

_UNITS = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


@dataclass(frozen=True)
class Entry:
    """One kept step run."""

    key: str
    step: str  # the step's name, as its report gives it ("?" where unreadable)
    size: int  # bytes
    last_used: float  # seconds since the epoch
    path: str
    complete: bool  # False for what a killed run left half-written


def parse_size(text: str) -> int:
    """`500M`, `2G`, `1.5GB`, `800000` (bytes) as bytes; ValueError when malformed."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([BKMGT]?)(?:i?B)?\s*", text.upper())
    if found is None:
        raise ValueError(f"{text!r} is not a size (e.g. 500M, 2G, 800000)")
    return int(float(found.group(1)) * _UNITS[found.group(2)])


def format_size(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def entries(cache_dir: str) -> list[Entry]:
    """Every entry of the cache, least recently used first (half-written ones included)."""
    found = []
    try:
        names = os.listdir(cache_dir)
    except OSError:
        return []
    for name in names:
        path = os.path.join(cache_dir, name)
        if name == ".locks" or not os.path.isdir(path):
            continue
        complete = not name.startswith(".") and os.path.isfile(os.path.join(path, "complete"))
        found.append(Entry(name.lstrip(".").split(".")[0], _step(path), _size(path),
                           os.stat(path).st_mtime, path, complete))
    return sorted(found, key=lambda e: (e.last_used, e.key))


def prune(cache_dir: str, older_than: float | None = None,
          max_size: int | None = None) -> list[Entry]:
    """Delete half-written entries, entries unused for `older_than` seconds, then the least
    recently used until the rest fits in `max_size` bytes; the deleted entries."""
    now = time.time()
    kept = entries(cache_dir)
    removed = [e for e in kept if not e.complete
               or (older_than is not None and now - e.last_used > older_than)]
    kept = [e for e in kept if e not in removed]
    if max_size is not None:
        total = sum(e.size for e in kept)
        while kept and total > max_size:
            oldest = kept.pop(0)
            removed.append(oldest)
            total -= oldest.size
    _delete(removed)
    return removed


def _delete(chosen: Iterable[Entry]) -> None:
    for entry in chosen:
        shutil.rmtree(entry.path, ignore_errors=True)
        lock = os.path.join(os.path.dirname(entry.path), ".locks", entry.key)
        if os.path.exists(lock):
            os.unlink(lock)


def _size(path: str) -> int:
    total = 0
    for parent, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):  # gone meanwhile
                total += os.lstat(os.path.join(parent, name)).st_size
    return total


def _step(path: str) -> str:
    try:
        with open(os.path.join(path, "out", "report.json"), encoding="utf-8") as handle:
            return str(json.load(handle).get("step", "?"))
    except (OSError, ValueError, AttributeError):
        return "?"


def cache_command(out_dir: str, older_than_days: float | None, max_size: str | None,
                  clear: bool, wait: bool) -> list[str]:
    """`nb2cwl cache`: list the cache of `out_dir`, or prune it (under the folder's run
    lock); the lines to print. OptionError for a folder without a cache or a bad size."""
    from nb2cwl.errors import OptionError
    from nb2cwl.run_lock import RunLock

    cache_dir = os.path.join(out_dir, CACHE_DIR)
    if not os.path.isdir(cache_dir):
        raise OptionError(f"{out_dir} has no step cache ({CACHE_DIR}): nb2cwl run has not "
                          "kept anything there")
    try:
        limit = parse_size(max_size) if max_size is not None else None
    except ValueError as exc:
        raise OptionError(f"--max-size: {exc}") from None
    if not (clear or older_than_days is not None or limit is not None):
        found = entries(cache_dir)
        lines = [f"{'entry':<14}{'step':<28}{'size':>10}  last used"]
        lines += [f"{e.key[:12]:<14}{e.step[:27]:<28}{format_size(e.size):>10}  "
                  f"{_when(e.last_used)}{'' if e.complete else '  (half-written)'}"
                  for e in reversed(found)]
        total = sum(e.size for e in found)
        lines.append(f"{_count(found)}, {format_size(total)} in {cache_dir}")
        return lines
    with RunLock(out_dir, out_dir, "cache prune", wait):
        removed = prune(cache_dir, 0.0 if clear else
                        None if older_than_days is None else older_than_days * 86400, limit)
        kept = entries(cache_dir)
    return [f"removed {_count(removed)} ({format_size(sum(e.size for e in removed))}); kept "
            f"{_count(kept)} ({format_size(sum(e.size for e in kept))}) in {cache_dir}"]


def apply_limit(out_dir: str, limit: str | None) -> str | None:
    """The size limit a run applies when it ends (--cache-limit, or NB2CWL_CACHE_LIMIT): the
    least recently used entries go first; a note of what went, or None."""
    limit = limit or os.environ.get(LIMIT_ENV)
    cache_dir = os.path.join(out_dir, CACHE_DIR)
    if not limit or not os.path.isdir(cache_dir):
        return None
    removed = prune(cache_dir, max_size=parse_size(limit))
    if not removed:
        return None
    return (f"the step cache was over its limit of {limit}: removed the least recently used "
            f"{_count(removed)} ({format_size(sum(e.size for e in removed))})")


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def _count(found: list[Entry]) -> str:
    return f"{len(found)} {'entry' if len(found) == 1 else 'entries'}"
