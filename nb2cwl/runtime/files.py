"""Files between steps: staging a step's input files and capturing the files it writes."""

from __future__ import annotations

import os
import shutil

#: What the runtime itself keeps in a step's working directory; never user files.
RESERVED = ("nb2cwl-out", "nb2cwl_runtime", "nb2cwl_runtime.zip", "nb2cwl-home",
            "nb2cwl-parameters.json")


#: The stamp of a folder in a snapshot: a folder a cell made, even an empty one, is written.
FOLDER = (-1, -1)


def snapshot(root: str) -> dict[str, tuple[int, int]]:
    """Every file under `root` (outside reserved folders) with its mtime and size, and every
    folder (stamped FOLDER)."""
    seen: dict[str, tuple[int, int]] = {}
    for folder, dirs, files in os.walk(root):
        rel_folder = os.path.relpath(folder, root)
        if rel_folder == ".":
            dirs[:] = [d for d in dirs if d not in RESERVED]
            files = [f for f in files if f not in RESERVED]
        for name in dirs:
            seen[os.path.normpath(os.path.join(rel_folder, name))] = FOLDER
        for name in files:
            path = os.path.join(folder, name)
            rel = os.path.normpath(os.path.join(rel_folder, name))
            try:
                info = os.stat(path)
            except OSError:
                continue
            seen[rel] = (info.st_mtime_ns, info.st_size)
    return seen


def capture_changes(root: str, before: dict[str, tuple[int, int]], target: str) -> list[str]:
    """Copy files created or changed since `before` into `target`; return their paths."""
    after = snapshot(root)
    changed = sorted(p for p, stamp in after.items() if before.get(p) != stamp)
    os.makedirs(target, exist_ok=True)
    for rel in changed:
        destination = os.path.join(target, rel)
        if after[rel] == FOLDER:
            os.makedirs(destination, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(destination) or ".", exist_ok=True)
        shutil.copy2(os.path.join(root, rel), destination)
    return [rel for rel in changed if after[rel] != FOLDER]


def stage(source: str, rel: str, root: str) -> None:
    """Place `source` (file or folder) at the relative path `rel` under `root`."""
    destination = confined(root, rel)
    os.makedirs(os.path.dirname(destination) or ".", exist_ok=True)
    if os.path.isdir(source):
        shutil.copytree(source, destination, dirs_exist_ok=True)
    else:
        shutil.copy2(source, destination)


def stage_tree(source: str, root: str, only: list[str] | None = None) -> None:
    """Copy files from a captured folder into `root`: all of them, or the paths in `only`."""
    if not os.path.isdir(source):
        return
    if only is None:
        shutil.copytree(source, root, dirs_exist_ok=True)
        return
    for rel in only:
        path = os.path.join(source, rel)
        if os.path.exists(path):
            stage(path, rel, root)


def confined(root: str, rel: str) -> str:
    """`rel` joined under `root`; raise if it would escape `root`."""
    full = os.path.realpath(os.path.join(root, rel))
    base = os.path.realpath(root)
    if full != base and not full.startswith(base + os.sep):
        raise ValueError(f"path {rel!r} escapes the step's working directory")
    return full
