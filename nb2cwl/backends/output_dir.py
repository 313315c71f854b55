"""Whether a compile may write into an output folder, and what of its earlier output goes."""

from __future__ import annotations

import json
import os
from pathlib import Path

from nb2cwl.backends.naming import MANIFEST, RUN_LOCK
from nb2cwl.errors import OutputExistsError


def check_output_dir(out_dir: str, force: bool,
                     notebook: str | None = None) -> list[str]:
    """Make sure writing into `out_dir` loses nothing a user wrote (unless `force`): neither
    files nb2cwl did not write nor the workflow (and runs) of another notebook. OutputExistsError
    if it would; else the files nb2cwl wrote there before (its manifest's), which a new write
    replaces. Nothing is removed."""
    path = Path(out_dir)
    if not path.exists():
        return []
    if not path.is_dir():
        raise OutputExistsError(f"{out_dir} exists and is not a directory")
    manifest = path / MANIFEST
    if manifest.exists():
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
            listed = [str(rel) for rel in data.get("files", [])]
        except (ValueError, AttributeError):
            raise OutputExistsError(f"{out_dir}/{MANIFEST} is damaged; remove it, or choose "
                                    "another output directory") from None
        other = data.get("notebook")
        if notebook and other and not force and os.path.abspath(other) != os.path.abspath(
                notebook):
            raise OutputExistsError(
                f"{out_dir} holds the workflow of another notebook, {other} (and its runs); "
                "choose another directory, or pass --force to replace it")
        return listed
    if any(p.name != RUN_LOCK for p in path.iterdir()) and not force:
        raise OutputExistsError(
            f"{out_dir} already exists and holds files nb2cwl did not write; choose another "
            "directory or pass --force to write into it anyway")
    return []


def prepare_output_dir(out_dir: str, force: bool, notebook: str | None = None) -> None:
    """`check_output_dir`, then remove exactly the files nb2cwl wrote there before, and
    nothing outside the folder."""
    path = Path(out_dir)
    listed = check_output_dir(out_dir, force, notebook)
    root = path.resolve()
    for rel in listed:
        target = (path / rel).resolve()
        if root in target.parents and target.is_file() and not (path / rel).is_symlink():
            target.unlink()
