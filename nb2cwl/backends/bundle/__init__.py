"""Reproducible workflow bundles: a compiled workflow as a zipped Workflow RO-Crate.

`export_bundle` takes a compiled output directory and writes a zip whose root holds
`ro-crate-metadata.json` and `streamflow.yml`, so `streamflow run DIR/streamflow.yml` reruns
it after unzipping. Besides the compiled files, the bundle holds the input files that were
beside the notebook, the workflow packed into one file, an environment lock, the map from cells
to steps and from variables to the files that carry them, the seeds, and with a run, StreamFlow's
own provenance and the run's outputs.

Integrity, in two layers:

- `CHECKSUMS.sha256` lists the sha256 of every file (`sha256sum -c` reads it). `nb2cwl verify`
  checks it before it reads anything else.
- At run time, without `nb2cwl verify`: every tool's command carries the sha256 of
  the runtime's zip `nb2cwl_runtime.zip` and of the seal `nb2cwl-seal.json`, the sha256 of
  every file the steps read. A one-line bootstrap in the command checks the zip before it
  executes the zip's `checksums.py`; `checksums.guard` checks the seal, then the step's own
  files, and only then runs the step's script. A first step, `nb2cwl_verify`, checks every
  file of the seal and every other step waits for it, so a changed file stops the run before
  any cell runs.

One module per concept: `names` (the bundle's file names and shared constants), `files` (small
file helpers), `copying` (the compiled files, the inputs, deployment files), `sealing` (the
seal, the check step, the guard in every tool), `seeds` (random state), `cell_map` (cells to
steps, values and files to what carries them), `original_run` (a run's provenance and
outputs), `images` (the image the docker deployments run in), `texts` (README, Dockerfile,
lock warnings) and `description` (what the RO-Crate says). This module puts them together in
`export_bundle` and re-exports the names other modules import from `nb2cwl.backends.bundle`.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from nb2cwl.backends.bundle.cell_map import cell_map
from nb2cwl.backends.bundle.copying import (
    carry_deployment_files,
    check_output,
    copy_compiled,
    copy_inputs,
)
from nb2cwl.backends.bundle.description import describe
from nb2cwl.backends.bundle.files import (
    _files,
    _zip,
    load_yaml,
    sha256,
    write,
    write_packed,
    write_yaml,
)
from nb2cwl.backends.bundle.images import bundle_tag, use_bundle_image
from nb2cwl.backends.bundle.names import (
    BOOTSTRAP,
    CHECK_REPORT,
    INPUTS,
    MAP,
    OUTPUTS,
    PROVENANCE,
    RUN,
    SEAL,
    START_SEED,
    SUMS,
    VERIFIED_FILE,
    VERIFY_STEP,
)
from nb2cwl.backends.bundle.original_run import collect_run
from nb2cwl.backends.bundle.sealing import seal
from nb2cwl.backends.bundle.seeds import seed_record
from nb2cwl.backends.bundle.texts import dockerfile, lock_warnings, readme
from nb2cwl.backends.crate import write_crate
from nb2cwl.backends.environment_lock import lock_environment
from nb2cwl.ir.model import Workflow

__all__ = [
    "BOOTSTRAP",
    "CHECK_REPORT",
    "INPUTS",
    "MAP",
    "OUTPUTS",
    "PROVENANCE",
    "RUN",
    "SEAL",
    "START_SEED",
    "SUMS",
    "VERIFIED_FILE",
    "VERIFY_STEP",
    "BundleOptions",
    "BundleSummary",
    "cell_map",
    "check_output",
    "export_bundle",
    "seed_record",
    "write_packed",
]


@dataclass(frozen=True)
class BundleOptions:
    """What `nb2cwl export` was asked for."""

    with_run: str | None = None  # a compiled output directory that StreamFlow has run
    license: str | None = None
    author: str | None = None
    force: bool = False


@dataclass(frozen=True)
class BundleSummary:
    """What was written."""

    path: str
    files: int
    digest: str  # sha256 of CHECKSUMS.sha256: pins the whole bundle
    warnings: tuple[str, ...] = field(default=())


def export_bundle(workflow: Workflow, compiled: str, output: str,
                  options: BundleOptions | None = None) -> BundleSummary:
    """Bundle the workflow compiled into `compiled` as the zip `output`."""
    options = options or BundleOptions()
    check_output(output, options.force)
    warnings: list[str] = []
    with tempfile.TemporaryDirectory(prefix="nb2cwl-bundle-") as work:
        root = Path(work) / "bundle"
        root.mkdir()
        copy_compiled(Path(compiled), root)
        warnings += carry_deployment_files(root)
        job = load_yaml(root / "job.yml")
        copy_inputs(workflow, job, root)
        run = None
        if options.with_run:
            run = collect_run(Path(options.with_run), Path(compiled), root, Path(work))
        lock = lock_environment(workflow)
        warnings += lock_warnings(lock)
        tag = bundle_tag(workflow, lock)
        in_image, other_images = use_bundle_image(root, tag)
        warnings += other_images
        seeds = seed_record(workflow, lock)
        if run is not None:  # the random states the original run handed between steps
            seeds["original_run_states"] = [
                {"step": step, "state": var, **where}
                for step, found in sorted(run.values.items())
                for var, where in sorted(found.items()) if var.startswith("rng:")]
        warnings += [f"{workflow.notebook_name}: {note}" for note in seeds["notes"]]
        if not options.license:
            warnings.append("no --license given: the crate says the license is not specified")
        seal(workflow, root, job, seeds)
        write_yaml(root / "job.yml", job)
        _write_packed(root)
        write(root / "environment" / "requirements.txt", lock.requirements_text())
        write(root / "environment" / "lock.json", lock.to_text())
        write(root / "environment" / "seeds.json", json.dumps(seeds, indent=1) + "\n")
        write(root / "environment" / "Dockerfile", dockerfile(lock, tag, in_image))
        write(root / MAP, json.dumps(cell_map(workflow, job, run), indent=1) + "\n")
        write(root / "README.md", readme(workflow, lock, seeds, run, (tag, in_image)))
        write_crate(root, describe(workflow, root, options, run))
        sums = {rel: sha256(root / rel) for rel in _files(root) if rel != SUMS}
        write(root / SUMS, "".join(f"{sums[p]}  {p}\n" for p in sorted(sums)))
        digest = sha256(root / SUMS)
        count = _zip(root, Path(output))
    return BundleSummary(path=output, files=count, digest=digest, warnings=tuple(warnings))


def _write_packed(root: Path) -> None:
    write_packed(root / "workflow.cwl", root / "workflow.packed.cwl")
