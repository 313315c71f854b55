"""The original run a bundle can carry: StreamFlow's provenance of it and its outputs.

`collect_run` checks that a run directory was compiled from the same notebook with the same
options, finds its last completed run in StreamFlow's database, has `streamflow prov` write a
Workflow Run RO-Crate of it, copies that and `nb2cwl check`'s report into the bundle, and reads
the crate back (`Run`): the run's name and times, its outputs (copied out into the bundle) and
where each step's values file sits in the provenance.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from nb2cwl.backends.bundle.files import load_yaml
from nb2cwl.backends.bundle.names import CHECK_REPORT, OUTPUTS, PROVENANCE
from nb2cwl.backends.naming import RUNTIME_ARCHIVE
from nb2cwl.backends.writer import MANIFEST
from nb2cwl.errors import BundleError

#: StreamFlow 0.2.0rc3's Status.COMPLETED in its database.
_COMPLETED = 4


@dataclass
class Run:
    name: str
    start: str | None
    end: str | None
    outputs: list[str]  # bundle paths
    values: dict[str, dict[str, dict[str, Any]]]  # step -> var -> where


def collect_run(out: Path, compiled: Path, root: Path, work: Path) -> Run:
    """Take a run of `out` (compiled from the same notebook): provenance and outputs."""
    if not (out / MANIFEST).is_file() or not (out / "streamflow.yml").is_file():
        raise BundleError(f"{out} is not a directory nb2cwl compiled (no {MANIFEST} or "
                          "streamflow.yml)")
    _same_workflow(out, compiled)
    config = load_yaml(out / "streamflow.yml")
    connection = config.get("database", {}).get("config", {}).get("connection")
    database = (out / connection) if connection else None
    if database is None or not database.is_file():
        raise BundleError(f"{out} has no StreamFlow database: run it first (streamflow run "
                          f"{out / 'streamflow.yml'})")
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection_:
        row = connection_.execute("SELECT name FROM workflow WHERE status = ? ORDER BY id DESC "
                                  "LIMIT 1", (_COMPLETED,)).fetchone()
    if row is None:
        raise BundleError(f"{out} has no completed run: run it first (streamflow run "
                          f"{out / 'streamflow.yml'})")
    name = row[0]
    where = str(out.resolve())
    if quote(where) != where:
        raise BundleError(f"{out}: streamflow prov (StreamFlow 0.2.0rc3) cannot read a run whose "
                          "directory path holds spaces or characters URLs escape; compile and "
                          "run the notebook in a directory without them")
    prov_dir = work / "provenance"
    prov_dir.mkdir()
    result = subprocess.run(
        [sys.executable, "-c", "import sys\nfrom streamflow.main import run\n"
         "sys.argv = ['streamflow', *sys.argv[1:]]\nsys.exit(run())",
         "prov", name, "--file", str((out / "streamflow.yml").resolve()), "--outdir",
         str(prov_dir.resolve()), "--name", "provenance.crate.zip"],
        capture_output=True, text=True)
    archive = prov_dir / "provenance.crate.zip"
    if result.returncode != 0 or not archive.is_file():
        tail = (result.stdout + result.stderr).strip().splitlines()[-5:]
        raise BundleError(f"streamflow prov failed for {out}: " + " | ".join(tail))
    target = root / PROVENANCE
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(archive, target)
    _copy_check_report(out, root)
    return _read_provenance(target, root)


def _copy_check_report(out: Path, root: Path) -> None:
    """The report of `nb2cwl check`, when the last run of `out` was checked."""
    runs = sorted((p for p in (out / "runs").glob("*") if p.name.isdigit()),
                  key=lambda p: int(p.name))
    if runs and (runs[-1] / "nb2cwl-check.json").is_file():
        shutil.copyfile(runs[-1] / "nb2cwl-check.json", root / CHECK_REPORT)


def _same_workflow(out: Path, compiled: Path) -> None:
    listed = json.loads((compiled / MANIFEST).read_text(encoding="utf-8"))["files"]
    for rel in listed:
        if not (rel in ("workflow.cwl", "streamflow.yml", RUNTIME_ARCHIVE)
                or rel.startswith(("steps/", "notebook/"))):
            continue
        theirs = out / rel
        if not theirs.is_file() or theirs.read_bytes() != (compiled / rel).read_bytes():
            raise BundleError(
                f"{out} was not compiled from this notebook with these options: {rel} differs "
                "(the notebook, the options or nb2cwl changed since); export with the options "
                "it was compiled with, or run the notebook again")


def _read_provenance(archive: Path, root: Path) -> Run:
    with zipfile.ZipFile(archive) as crate:
        graph = json.loads(crate.read("ro-crate-metadata.json"))["@graph"]
        entities = {e["@id"]: e for e in graph}
        main = _ref(entities["./"].get("mainEntity"))
        actions = [e for e in graph if e.get("@type") == "CreateAction"]
        top = next((a for a in actions if _ref(a.get("instrument")) == main), None)
        if top is None:
            raise BundleError(f"{archive.name}: the provenance has no run of {main}")
        outputs: list[str] = []
        for ref in _refs(top.get("result")):
            for member, name in _members(entities, ref):
                rel = PurePosixPath(name)
                if rel.is_absolute() or ".." in rel.parts:
                    raise BundleError(f"{archive.name}: output name {name!r} is unsafe")
                target = root / OUTPUTS / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(crate.read(member))
                outputs.append(f"{OUTPUTS}/{rel}")
        values: dict[str, dict[str, dict[str, Any]]] = {}
        for action in actions:
            tool = _ref(action.get("instrument")) or ""
            step = tool[:-len(".cwl")] if tool.endswith(".cwl") else None
            if step is None or tool == main:
                continue
            for ref in _refs(action.get("result")):
                entity = entities.get(ref, {})
                if _first(entity.get("alternateName")) != "values":
                    continue
                parts = dict((name, member) for member, name in _members(entities, ref))
                index_member = parts.get("values/index.json")
                if index_member is None:
                    continue
                index = json.loads(crate.read(index_member))
                for var, where in index.items():
                    member = parts.get(f"values/{where['file']}")
                    values.setdefault(step, {})[var] = {
                        "file": where["file"], "format": where.get("format"),
                        "provenance": PROVENANCE, "member": member}
    return Run(name=top.get("name", "original run"), start=top.get("startTime"),
               end=top.get("endTime"), outputs=sorted(outputs), values=values)


def _members(entities: dict[str, Any], ref: str) -> list[tuple[str, str]]:
    """(zip member, original relative name) of every file under the entity `ref`."""
    entity = entities.get(ref)
    if entity is None:
        return []
    types = entity.get("@type")
    types = types if isinstance(types, list) else [types]
    if "File" in types:
        return [(ref, _first(entity.get("alternateName")) or ref)]
    found: list[tuple[str, str]] = []
    for part in _refs(entity.get("hasPart")):
        found += _members(entities, part)
    return found


def _ref(value: Any) -> str | None:
    refs = _refs(value)
    return refs[0] if refs else None


def _refs(value: Any) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    return [item["@id"] if isinstance(item, dict) else item for item in items]


def _first(value: Any) -> str | None:
    if isinstance(value, list):
        return value[0] if value else None
    return value
