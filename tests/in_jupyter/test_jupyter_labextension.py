"""The committed prebuilt front end is built from the committed sources (checked without node:
scripts/build-labextension.sh records a digest of the sources in labextension/)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

FRONT_END = (Path(__file__).resolve().parent.parent.parent / "nb2cwl" / "integrations"
             / "jupyterlab")


def _sources_digest(root: Path) -> str:
    """As scripts/build-labextension.sh computes it (see its header)."""
    files = ["package.json", "package-lock.json", "tsconfig.json"] + [
        path.relative_to(root).as_posix()
        for folder in ("src", "style") for path in (root / folder).rglob("*") if path.is_file()]
    digest = hashlib.sha256()
    for relative in sorted(files):
        file_digest = hashlib.sha256((root / relative).read_bytes()).hexdigest()
        digest.update(f"{relative}\n{file_digest}\n".encode())
    return digest.hexdigest()


def test_the_built_extension_matches_its_sources() -> None:
    recorded = (FRONT_END / "labextension" / "sources.sha256").read_text().strip()
    assert recorded == _sources_digest(FRONT_END), (
        "the prebuilt extension is older than its sources: run scripts/build-labextension.sh "
        "and commit nb2cwl/integrations/jupyterlab/labextension/")


def test_the_built_extension_is_complete() -> None:
    built = json.loads((FRONT_END / "labextension" / "package.json").read_text())
    assert built["name"] == "nb2cwl-jupyterlab"
    entry = built["jupyterlab"]["_build"]["load"]
    assert (FRONT_END / "labextension" / entry).is_file()
