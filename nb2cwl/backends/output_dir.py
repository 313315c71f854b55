"""Whether a compile may write into an output folder, and what of its earlier output goes."""

from __future__ import annotations

import json
import os
from pathlib import Path

from nb2cwl.backends.naming import MANIFEST, RUN_LOCK
from nb2cwl.errors import OutputExistsError


def prepare_output_dir(out_dir: str, force: bool, notebook: str | None = None) -> None:
    """Make sure writing into `out_dir` loses nothing a user wrote (unless `force`): neither
    files nb2cwl did not write nor the workflow (and runs) of another notebook."""
    path = Path(out_dir)
    if not path.exists():
        return
    if not path.is_dir():
        raise OutputExistsError(f"{out_dir} exists and is not a directory")
    manifest = path / MANIFEST
    if manifest.exists():
        # our own earlier output: remove exactly the files we wrote then, and nothing outside
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
            listed = data.get("files", [])
        except (ValueError, AttributeError):
            raise OutputExistsError(f"{out_dir}/{MANIFEST} is damaged; remove it, or choose "
                                    "another output directory") from None
        other = data.get("notebook")
        if notebook and other and not force and os.path.abspath(other) != os.path.abspath(
                notebook):
            raise OutputExistsError(
                f"{out_dir} holds the workflow of another notebook, {other} (and its runs); "
                "choose another directory, or pass --force to replace it")
        root = path.resolve()
        for rel in listed:
            target = (path / str(rel)).resolve()
            inside = root in target.parents
            if inside and target.is_file() and not (path / str(rel)).is_symlink():
                target.unlink()
        return
    if any(p.name != RUN_LOCK for p in path.iterdir()) and not force:
        raise OutputExistsError(
            f"{out_dir} already exists and holds files nb2cwl did not write; choose another "
            "directory or pass --force to write into it anyway")
