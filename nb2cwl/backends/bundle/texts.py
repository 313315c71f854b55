"""The bundle's texts for people: the README, the Dockerfile and the lock's warnings.

`readme` writes how to run the bundle again and check it, what each file is, how its integrity
checks work and how it handles random state; `dockerfile` a container recipe for the locked
environment; `lock_warnings` what the environment lock could not pin (modules no installed
distribution provides, packages installed from a local path).
"""

from __future__ import annotations

from typing import Any

from nb2cwl.backends.bundle.names import MAP, RUN, SEAL, SUMS, VERIFY_STEP
from nb2cwl.backends.bundle.original_run import Run
from nb2cwl.backends.environment_lock import EnvironmentLock
from nb2cwl.backends.naming import notebook_file_name
from nb2cwl.backends.step_image import container_recipe
from nb2cwl.ir.model import Workflow


def lock_warnings(lock: EnvironmentLock) -> list[str]:
    warnings = [f"the notebook imports {module}, which no installed distribution provides: "
                "the lock cannot install it (a module beside the notebook?)"
                for module in lock.unresolved]
    warnings += [f"{p.name} {p.version} was installed from a local path; the lock names it in "
                 "a comment only" for p in lock.local_packages()]
    return warnings


def dockerfile(lock: EnvironmentLock, tag: str, in_image: list[str]) -> str:
    """The recipe of the bundle's image, `tag`; `in_image`: the docker deployments of
    streamflow.yml that run their steps in it."""
    header = [
        "Container recipe for the environment of the original run: its Python and the "
        "packages of", "environment/requirements.txt. Build it from the bundle's folder:",
        f"  docker build -t {tag} -f environment/Dockerfile .",
        *([f"The docker deployment{'s' if len(in_image) > 1 else ''} {', '.join(in_image)} of "
           "streamflow.yml run their steps in it, by that tag."] if in_image else []),
        "Run the whole bundle in it:",
        f'  docker run --rm -v "$PWD:/bundle" -w /bundle {tag} \\',
        "      streamflow run streamflow.yml --outdir results"]
    return container_recipe(lock, "environment/requirements.txt", header)


def readme(workflow: Workflow, lock: EnvironmentLock, seeds: dict[str, Any],
           run: Run | None, image: tuple[str, list[str]] | None = None) -> str:
    """The bundle's README; `image`: the bundle image's tag and the docker deployments that
    run their steps in it (none: no section on Docker)."""
    major_minor = ".".join(lock.python.split(".")[:2])
    name = workflow.notebook_name
    lines = [
        f"# {name}: a reproducible workflow bundle",
        "",
        f"Made by nb2cwl from `notebook/{notebook_file_name(workflow)}`: a CWL v1.2 workflow "
        "that StreamFlow runs, one "
        "step per notebook cell, with everything needed to run it again elsewhere.",
        "",
        "## Run it again",
        "",
        "```bash",
        "nb2cwl verify .                       # optional: every file and the crate checked",
        f"python{major_minor} -m venv .venv",
        ".venv/bin/python -m pip install -r environment/requirements.txt",
        'PATH="$PWD/.venv/bin:$PATH" streamflow run streamflow.yml --outdir ../results',
    ]
    if run is not None:
        lines.append("nb2cwl verify . --outputs ../results  # same outputs as the original run?")
    lines += [
        "```",
        "",
        "The steps run `python3` from `PATH`: put the environment's `bin` folder first. "
        f"The lock is for Python {lock.python} ({lock.platform}).",
        "",
    ]
    if image is not None and image[1]:
        tag, names = image
        lines += [
            "## The steps' image",
            "",
            f"The Docker deployment{'s' if len(names) > 1 else ''} {', '.join(names)} of "
            f"`streamflow.yml` run{'' if len(names) > 1 else 's'} the steps in `{tag}`, the "
            "image of this bundle's own environment (`environment/Dockerfile`: the lock's "
            "Python and packages). Build it once on the Docker host, before the run:",
            "",
            "```bash",
            f"docker build -t {tag} -f environment/Dockerfile .",
            "```",
            "",
            "The tag ends with a digest of the lock: another lock, another tag.",
            "",
        ]
    lines += [
        "## What is here",
        "",
        "| Path | What |",
        "| --- | --- |",
        "| `ro-crate-metadata.json` | the Workflow RO-Crate metadata (made with ro-crate-py) |",
        "| `streamflow.yml`, `job.yml` | the StreamFlow configuration and the workflow's inputs |",
        "| `workflow.cwl`, `tools/` | the CWL workflow, one tool per step |",
        "| `workflow.packed.cwl` | the same workflow in one file |",
        "| `steps/`, `nb2cwl_runtime.zip` | the script each step runs, and the step runtime "
        "(its Python files, zipped; steps import it from the zip) |",
        "| `notebook/` | the source notebook |",
        "| `inputs/` | the files beside the notebook that cells read (if any) |",
        "| `environment/` | `requirements.txt` (the lock), `lock.json` (why each package), "
        "`seeds.json`, a `Dockerfile` |",
        f"| `{MAP}` | notebook cells (numbers and ids) to steps, variables and files to what "
        "carries them |",
        f"| `{SEAL}` | the sha256 of every file the steps read, checked by each step |",
        f"| `{SUMS}` | the sha256 of every file (`sha256sum -c {SUMS}`) |",
    ]
    if run is not None:
        lines.append(f"| `{RUN}/` | the original run: `provenance.crate.zip` (a Workflow Run "
                     "RO-Crate from `streamflow prov`) and `outputs/` |")
    lines += [
        "",
        "## Integrity",
        "",
        f"`nb2cwl verify .` checks `{SUMS}` before it reads anything else. Without it, the "
        f"workflow checks itself: its first step, `{VERIFY_STEP}`, checks every file the "
        f"steps read against `{SEAL}` and every other step waits for it; each step checks its "
        "own script, runtime and inputs again before it loads anything. The sha256 of the "
        "checking code and of the seal are written into every tool's command.",
        "",
        "What you add beside the bundle's own files and folders (the `.venv` above, a "
        "results folder) is not part of it: `nb2cwl verify` lists it in one line as added "
        "and still verifies the bundle. A file added inside one of the bundle's folders "
        "(`steps/`, `tools/`, ...) or a file changed fails verification: the steps could "
        "read it.",
        "",
        "## Random state",
        "",
        seeds["how"] + " The seeds the notebook sets are listed in `environment/seeds.json`.",
    ]
    for note in seeds["notes"]:
        lines.append(f"- {note}")
    return "\n".join(lines) + "\n"
