"""`nb2cwl verify`: check a bundle's files against its checksums, then its crate and seal.

Nothing in the bundle is parsed before `CHECKSUMS.sha256` has been checked, and only files
whose sha256 matched are read afterwards. The crate is checked with ro-crate-py (it must load,
conform to Workflow RO-Crate 1.0, name an existing CWL main workflow, and list every file).
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote

from nb2cwl.backends.naming import RUNTIME_ARCHIVE
from nb2cwl.errors import BundleError
from nb2cwl.runtime.checksums import SEAL, SUMS, compare, list_files, parse_sums, sha256_file

WORKFLOW_PROFILE = "https://w3id.org/workflowhub/workflow-ro-crate/1.0"
RO_CRATE_PROFILE = "https://w3id.org/ro/crate/1.1"
#: Written by a run of the bundle itself (StreamFlow's database): not part of the bundle.
RUN_STATE = (".streamflow/",)
OUTPUTS = "run/outputs"


@dataclass
class VerifyReport:
    """What `verify_bundle` found."""

    root: str
    files: int = 0
    digest: str = ""
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    outputs_checked: int = 0
    #: files added beside the bundle's own (a .venv, a results folder): nothing reads them
    added: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing differs."""
        return not self.problems

    def added_summary(self) -> str:
        """The added files by top-level entry: `.venv/ (22357 files), notes.txt`."""
        counts: dict[str, int] = {}
        for rel in self.added:
            top, sep, _ = rel.partition("/")
            key = top + sep
            counts[key] = counts.get(key, 0) + 1
        return ", ".join(k if not k.endswith("/") else
                         f"{k} ({n} file{'s' if n != 1 else ''})" for k, n in sorted(
                             counts.items()))


def verify_bundle(path: str, outputs: str | None = None, digest: str | None = None
                  ) -> VerifyReport:
    """Verify the bundle folder (or zip) at `path`; compare a rerun's `outputs` if given."""
    if os.path.isfile(path) and zipfile.is_zipfile(path):
        with tempfile.TemporaryDirectory(prefix="nb2cwl-verify-") as work:
            _extract(path, work)
            report = _verify_dir(Path(work), outputs, digest)
            report.root = path
            return report
    if not os.path.isdir(path):
        raise BundleError(f"{path}: not a bundle folder or zip")
    return _verify_dir(Path(path), outputs, digest)


def _extract(archive: str, target: str) -> None:
    with zipfile.ZipFile(archive) as bundle:
        for name in bundle.namelist():
            rel = PurePosixPath(name)
            if rel.is_absolute() or ".." in rel.parts:
                raise BundleError(f"{archive}: member {name!r} would be written outside the "
                                  "bundle; refusing it")
        bundle.extractall(target)


def _verify_dir(root: Path, outputs: str | None, digest: str | None) -> VerifyReport:
    report = VerifyReport(root=str(root))
    sums_path = root / SUMS
    if not sums_path.is_file():
        raise BundleError(f"{root}: no {SUMS}; is this a bundle made by nb2cwl export?")
    report.digest = sha256_file(str(sums_path))
    if digest is not None and digest.removeprefix("sha256:").lower() != report.digest:
        report.problems.append(f"{SUMS}: its sha256 is {report.digest}, not the expected "
                               f"{digest}")
        return report  # the list itself is not the one expected: trust nothing in it
    try:
        sums = parse_sums(sums_path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise BundleError(f"{root}: {SUMS} is malformed: {exc}") from None
    report.files = len(sums)
    for rel in sorted(sums):
        safe = PurePosixPath(rel)
        if safe.is_absolute() or ".." in safe.parts:
            report.problems.append(f"{rel}: a path outside the bundle")
            continue
        report.problems += compare(str(root / rel), rel, sums)
    skip = RUN_STATE
    if outputs is not None:  # a rerun's outputs written inside the bundle are not part of it
        inside = os.path.relpath(os.path.abspath(outputs), root.resolve())
        if not inside.startswith(".."):
            skip = (*skip, inside.replace(os.sep, "/").rstrip("/") + "/")
    own = {rel.split("/")[0] for rel in sums} | {SUMS}  # the bundle's files and folders
    for rel in list_files(str(root)):
        if rel != SUMS and rel not in sums and not rel.startswith(skip):
            if rel.split("/")[0] in own:  # inside the bundle's own folders: steps may read it
                report.problems.append(f"{rel}: added inside the bundle (not in {SUMS})")
            else:
                report.added.append(rel)
    if report.problems:
        return report  # do not read files that failed their checksum
    report.problems += _check_seal(root, sums)
    report.problems += _check_crate(root, sums)
    if outputs is not None:
        report.outputs_checked = _check_outputs(root, Path(outputs), sums, report.problems)
    return report


def _check_seal(root: Path, sums: dict[str, str]) -> list[str]:
    """The seal lists the steps' files with the sums of CHECKSUMS; every tool names the seal."""
    problems = []
    if SEAL not in sums:
        return [f"{SEAL}: missing from the bundle"]
    seal = json.loads((root / SEAL).read_text(encoding="utf-8"))
    for rel, expected in sorted(seal.get("files", {}).items()):
        if sums.get(rel) != expected:
            problems.append(f"{SEAL}: its sha256 for {rel} differs from {SUMS}")
    if "workflow.cwl" not in sums:
        problems.append("workflow.cwl: missing from the bundle")
    elif "tools/nb2cwl_verify.cwl" not in (root / "workflow.cwl").read_text(encoding="utf-8"):
        problems.append("workflow.cwl: does not run the check step nb2cwl_verify first")
    seal_digest = sums[SEAL]
    guard_digest = sums.get(RUNTIME_ARCHIVE, sums.get("nb2cwl_runtime/checksums.py"))  # (older)
    for rel in sorted(p for p in sums if p.startswith("tools/") and p.endswith(".cwl")):
        text = (root / rel).read_text(encoding="utf-8")
        if seal_digest not in text or (guard_digest is not None and guard_digest not in text):
            problems.append(f"{rel}: its command does not check this bundle's seal")
    return problems


def _check_crate(root: Path, sums: dict[str, str]) -> list[str]:
    """ro-crate-py loads the crate; Workflow RO-Crate 1.0's requirements hold; it lists all."""
    from rocrate.rocrate import ROCrate

    name = "ro-crate-metadata.json"
    if name not in sums:
        return [f"{name}: missing from the bundle"]
    try:
        crate = ROCrate(str(root))
    except Exception as exc:  # ro-crate-py raises plain ValueError/KeyError on bad crates
        return [f"{name}: ro-crate-py cannot load it: {type(exc).__name__}: {exc}"]
    problems = []
    descriptor = crate.metadata
    profiles = {_id(p) for p in _list(descriptor.get("conformsTo"))}
    for profile in (RO_CRATE_PROFILE, WORKFLOW_PROFILE):
        if profile not in profiles:
            problems.append(f"{name}: does not declare conformsTo {profile}")
    main = crate.mainEntity
    if main is None:
        problems.append(f"{name}: the root dataset has no mainEntity (the workflow)")
    else:
        types = set(_list(main.type))
        for needed in ("File", "SoftwareSourceCode", "ComputationalWorkflow"):
            if needed not in types:
                problems.append(f"{name}: the main workflow {main.id} is not a {needed}")
        if unquote(main.id) not in sums:
            problems.append(f"{name}: the main workflow {main.id} is not in the bundle")
        language = main.get("programmingLanguage")
        if language is None or "cwl" not in _id(language).lower():
            problems.append(f"{name}: the main workflow's programmingLanguage is not CWL")
    listed = set()
    for entity in crate.data_entities:
        if "File" not in _list(entity.type):
            continue
        path = unquote(entity.id)  # ro-crate-py writes ids as URL paths
        listed.add(path)
        if path not in sums and path != SUMS:
            problems.append(f"{name}: lists {path}, which is not in the bundle")
    for rel in sorted(sums):
        if rel not in listed and rel != name:
            problems.append(f"{name}: does not list {rel}")
    return problems


def _check_outputs(root: Path, outputs: Path, sums: dict[str, str],
                   problems: list[str]) -> int:
    """Every output of the original run is in `outputs` with the same sha256."""
    originals = {rel[len(OUTPUTS) + 1:]: digest for rel, digest in sums.items()
                 if rel.startswith(OUTPUTS + "/")}
    if not originals:
        raise BundleError(f"{root}: the bundle holds no original run to compare with (export "
                          "it with --with-run)")
    if not outputs.is_dir():
        raise BundleError(f"{outputs}: not a folder of outputs")
    for rel, digest in sorted(originals.items()):
        path = outputs / rel
        if not path.is_file():
            problems.append(f"outputs: {rel}: missing from {outputs}")
        elif sha256_file(str(path)) != digest:
            problems.append(f"outputs: {rel}: differs from the original run's (sha256)")
    return len(originals)


def _list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _id(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("@id", ""))
    return str(getattr(value, "id", value))
