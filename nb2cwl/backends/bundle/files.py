"""Small file helpers of the bundle: list, hash, write and zip files, and write YAML and CWL.

`_files` lists a folder's files as sorted relative POSIX paths, `sha256` hashes one file,
`write` writes a text file (making its folder), `load_yaml`, `write_yaml` and `write_cwl` read
and write YAML documents and CWL tools and workflows, `write_packed` packs a workflow and its
tools into one CWL file, and `_zip` writes the finished bundle folder as a zip, refusing file
names that a sha256sum list cannot hold.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Any

from cwl_utils.pack import pack
from ruamel.yaml import YAML

from nb2cwl.backends.cwl import without_blank_names
from nb2cwl.errors import BundleError


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def load_yaml(path: Path) -> Any:
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


def write_yaml(path: Path, document: Any) -> None:
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.width = 4096
    with path.open("w", encoding="utf-8") as handle:
        yaml.dump(document, handle)


def write_cwl(path: Path, document: dict[str, Any]) -> None:
    document = {k: v for k, v in without_blank_names(document).items() if k != "id"}
    path.parent.mkdir(parents=True, exist_ok=True)
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.width = 4096  # the bootstrap is one long line: keep it on one
    # written beside and renamed: a reader (a download while it is written) never sees half
    fd, partial = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write("#!/usr/bin/env cwl-runner\n")
            yaml.dump(document, handle)
        os.chmod(partial, 0o644)  # as open() makes it, not mkstemp's 0600
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)


_SAFE_NAME = re.compile(r"^[^\n\r\\]+$")


def _zip(root: Path, output: Path) -> int:
    files = _files(root)
    for rel in files:
        if not _SAFE_NAME.match(rel):
            raise BundleError(f"cannot bundle {rel!r}: newlines and backslashes in file names "
                              "do not survive sha256sum lists")
    partial = output.with_name(output.name + ".partial")
    output.parent.mkdir(parents=True, exist_ok=True)
    try:
        with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for rel in files:
                archive.write(root / rel, rel)
        os.replace(partial, output)
    finally:
        if partial.exists():
            partial.unlink()
    return len(files)


# cwl_utils' pack reads each tool with one module-wide ruamel parser, which two threads at once
# (the Jupyter server packs a run's workflow when it starts and when it is downloaded) corrupt
_PACKING = threading.Lock()


def write_packed(workflow: Path, target: Path) -> None:
    """The workflow `workflow` (workflow.cwl) with every tool packed in, as one file."""
    with _PACKING:
        packed = pack(str(workflow))
    write_cwl(target, packed)
