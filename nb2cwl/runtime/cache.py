"""Reuse a step's outputs when its code and every input are unchanged since an earlier run.

The key is a sha256 of the step's description (its cells' code, definitions, ports), the
runtime's own source, the content of every input file or folder, and every plain
(non-path) argument. `nb2cwl run` points NB2CWL_CACHE_DIR at the output directory; without
it nothing is cached. With NB2CWL_CACHE_REFRESH (`nb2cwl run --refresh`) every step runs
again and its outputs replace the kept ones. Steps that may touch files the analysis cannot
name are never cached, nor are failed or skipped steps.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from typing import Any

from .sources import own_location, runtime_sources

ENV = "NB2CWL_CACHE_DIR"
#: Set (nb2cwl run --refresh): every step runs again, and its outputs are kept for later runs.
REFRESH_ENV = "NB2CWL_CACHE_REFRESH"
#: Cell ids (comma-separated) whose steps run again (nb2cwl run --cells: the chosen cells run;
#: the cells they need may be reused).
RERUN_CELLS_ENV = "NB2CWL_RERUN_CELLS"
#: Variables that change what a step computes without changing its code or inputs: how many
#: replicas a training step's strategy has (the replicas' batches sum in another order).
STRATEGY_ENV = ("NB2CWL_CPU_REPLICAS", "NB2CWL_LOCAL_WORKERS", "CUDA_VISIBLE_DEVICES")


def cache_key(spec: dict[str, Any], args: dict[str, list[str]],
              parameters: dict[str, Any] | None = None) -> str | None:
    """The cache key of this step with these inputs (`parameters`: the values of its parameter
    ports), or None when it must not be cached."""
    if not os.environ.get(ENV) or spec.get("uncacheable"):
        return None
    digest = hashlib.sha256()
    stable = {**spec, "cells": [{k: v for k, v in c.items() if k != "id"}
                                for c in spec["cells"]]}  # ids only name cells in messages
    if isinstance(spec.get("plan"), dict):  # how the last run's item costs deal out chunks:
        stable["plan"] = {k: v for k, v in spec["plan"].items()  # the same results either
                          if k != "item_seconds"}  # way, and they vary from run to run
    digest.update(json.dumps(stable, sort_keys=True, default=str).encode())
    sources = runtime_sources(own_location())
    if sources is None:  # a key without the runtime's code could outlive a change of it
        return None
    for name, source in sorted(sources.items()):
        digest.update(name.encode())
        digest.update(source)
    for key in sorted(args):
        if key == "runtime":
            continue
        digest.update(key.encode())
        for value in args[key]:
            if os.path.isabs(value):  # a staged input (the engine passes absolute paths)
                _tree(value, digest)
            else:  # a plain value: the same value, the same key
                digest.update(f"value:{value}".encode())
    if spec.get("training"):
        digest.update(json.dumps([os.environ.get(name) for name in STRATEGY_ENV]).encode())
    for port, value in sorted((parameters or {}).items()):
        digest.update(port.encode())
        if isinstance(value, dict) and value.get("path"):  # a File or Directory: its content
            _tree(value["path"], digest)
        else:
            digest.update(json.dumps(value, sort_keys=True).encode())
    return digest.hexdigest()


def _file(path: str, digest: Any) -> None:
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)


def _tree(path: str, digest: Any) -> None:
    if os.path.isfile(path):
        _file(path, digest)
        return
    for folder, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(folder, name)
            digest.update(os.path.relpath(full, path).encode())
            _file(full, digest)


@contextlib.contextmanager
def exclusive(key: str | None) -> Iterator[None]:
    """Hold the cache entry `key` while the step runs: a step with the same key that starts
    meanwhile (another combination of a sweep) waits, then finds the outputs stored. The lock
    goes with the process, however it ends."""
    if key is None:
        yield
        return
    locks = os.path.join(os.environ[ENV], ".locks")
    os.makedirs(locks, exist_ok=True)
    with open(os.path.join(locks, key), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


#: What `restore` found wrong with an entry it discarded, for the step's report (one line).
discarded: list[str] = []


def restore(key: str, out: str, cells: list[str] | None = None) -> bool:
    """Copy cached outputs into `out`; True when there were any (never for a step running one
    of the `cells` asked to run again).

    An entry is used only when every file in it has the digest recorded when it was kept
    (like a content-addressed store's check): one damaged or cut short by a crash or a full
    disk is removed, and the step runs again (`discarded` says why).
    """
    entry = os.path.join(os.environ[ENV], key)
    if os.environ.get(REFRESH_ENV) or not os.path.isfile(os.path.join(entry, "complete")):
        return False
    again = set(filter(None, os.environ.get(RERUN_CELLS_ENV, "").split(",")))
    if again & set(cells or ()):
        return False
    damage = _damage(entry)
    if damage is not None:
        shutil.rmtree(entry, ignore_errors=True)
        discarded.append(f"the kept outputs of this step were damaged ({damage}): it ran again")
        return False
    shutil.copytree(os.path.join(entry, "out"), out, dirs_exist_ok=True)
    with contextlib.suppress(OSError):  # its last use (nb2cwl cache prunes the least recent)
        os.utime(entry)
    report_path = os.path.join(out, "report.json")
    with open(report_path, encoding="utf-8") as handle:
        report = json.load(handle)
    if "cache_notes" in report:  # what the run that kept it said of the cache; otherwise
        del report["cache_notes"]  # the outputs stay as they were, byte for byte: a step
        with open(report_path, "w", encoding="utf-8") as handle:  # reading them is reused
            json.dump(report, handle, indent=1)
    return True


def store(key: str, out: str) -> None:
    """Keep `out` for later runs (written aside first, so a crash leaves no half entry)."""
    root = os.environ[ENV]
    entry = os.path.join(root, key)
    replacing = os.path.exists(entry)
    if replacing and not (os.environ.get(REFRESH_ENV) or os.environ.get(RERUN_CELLS_ENV)):
        return
    staging = os.path.join(root, f".{key}.{os.getpid()}")
    earlier = os.path.join(root, f".{key}.{os.getpid()}.earlier")
    try:
        shutil.copytree(out, os.path.join(staging, "out"))
        with open(os.path.join(staging, "complete"), "w", encoding="utf-8") as handle:
            json.dump({"files": _digests(os.path.join(staging, "out"))}, handle)
            handle.flush()
            os.fsync(handle.fileno())
        if replacing:  # this run's outputs replace the earlier ones. Renamed aside in one
            os.replace(entry, earlier)  # step, never deleted in place: a run killed meanwhile
        os.replace(staging, entry)  # leaves the earlier entry whole, or no entry, or this one
    except OSError:  # a full disk or a race with a parallel run: the cache is only a help
        shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(earlier, ignore_errors=True)  # hidden, so only ever seen as half-written


def _digests(folder: str) -> dict[str, str]:
    """sha256 of every file under `folder`, by its path relative to it."""
    found: dict[str, str] = {}
    for parent, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(parent, name)
            digest = hashlib.sha256()
            _file(full, digest)
            found[os.path.relpath(full, folder)] = digest.hexdigest()
    return found


def _damage(entry: str) -> str | None:
    """What is wrong with a kept entry (a file missing, added or changed since it was kept,
    or no record of its files), or None."""
    try:
        with open(os.path.join(entry, "complete"), encoding="utf-8") as handle:
            recorded = json.load(handle)["files"]
        found = _digests(os.path.join(entry, "out"))
    except (OSError, ValueError, KeyError, TypeError):
        return "no record of its files"
    for name in sorted(set(recorded) | set(found)):
        if name not in found:
            return f"{name} is missing"
        if name not in recorded:
            return f"{name} was not kept"
        if recorded[name] != found[name]:
            return f"{name} changed"
    return None
