"""The step image of a notebook (`nb2cwl image`): a container recipe that pins what this
environment has.

The Docker and Helm deployments run each step in a container whose image needs python3,
cloudpickle and the notebook's libraries. `nb2cwl image` writes its build folder: a Dockerfile
on `python:<this Python>-slim` (or --base) and a requirements.txt with the exact versions this
environment has of everything the notebook imports, cloudpickle and IPython (the environment
lock a bundle carries, without StreamFlow, which runs outside the container). With --build it
runs `docker build` too. Pins that the base image already satisfies are not installed again,
so a base that brings the libraries (a TensorFlow GPU image) keeps its own copies.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from pathlib import Path

from nb2cwl.backends.environment_lock import EnvironmentLock, lock_environment
from nb2cwl.errors import BackendError, Location
from nb2cwl.ir.model import Workflow

DOCKERFILE = "Dockerfile"
REQUIREMENTS = "requirements.txt"
#: Checks in the image that every pin of the requirements is installed (exit status 1 if not).
_SATISFIED = ("import importlib.metadata as m, sys; "
              "key = lambda n: n.strip().lower().replace('_', '-').replace('.', '-'); "
              "have = {key(d.metadata['Name'] or ''): d.version for d in m.distributions()}; "
              "lines = [l.strip() for l in open(sys.argv[1]) if l.strip() and l[0] != '#']; "
              "pins = [l.split('==') for l in lines if '==' in l]; "
              "sys.exit(0 if len(pins) == len(lines) and all(have.get(key(n)) == v.strip() "
              "for n, v in pins) else 1)")


def container_recipe(lock: EnvironmentLock, requirements: str, header: list[str],
                     base: str | None = None) -> str:
    """A Dockerfile installing `requirements` (a path in the build context) on `base`
    (default: python:<the lock's Python>-slim), skipping pip where the base has every pin."""
    base = base or f"python:{lock.python}-slim"
    major, minor = lock.python.split(".")[:2]
    python = (f"import sys; v = sys.version_info; sys.exit(0 if v[:2] == ({major}, {minor}) "
              f"else f'Python {{v[0]}}.{{v[1]}} in the image; the steps need {major}.{minor} "
              "(values cross steps pickled)')")
    return "\n".join([
        *(f"# {line}" if line else "#" for line in header),
        f"ARG BASE={base}",
        "FROM ${BASE}",
        f"COPY {requirements} /tmp/nb2cwl-requirements.txt",
        "# pip's notices off (a failure's last line is its cause); a Debian-based image's Python",
        "# is marked externally managed: this image is the environment",
        "ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore "
        "PIP_BREAK_SYSTEM_PACKAGES=1",
        f'RUN python3 -c "{python}" \\',
        f'    && (python3 -c "{_SATISFIED}" /tmp/nb2cwl-requirements.txt \\',
        "     || python3 -m pip install --no-cache-dir -r /tmp/nb2cwl-requirements.txt) \\",
        '    && python3 -c "import cloudpickle"',
        "ENV PYTHONUNBUFFERED=1",
        "WORKDIR /tmp",
        "# StreamFlow keeps the container alive with a shell and runs steps with exec",
        'CMD ["/bin/sh"]',
        "",
    ])


def default_tag(workflow: Workflow, lock: EnvironmentLock, base: str | None = None,
                kind: str = "step") -> str:
    """nb2cwl-<kind>-<notebook>:<12 hex digits of the pins and base>: a new tag when either
    changes (`kind`: "step" for `nb2cwl image`, "bundle" for a bundle's own image)."""
    stem = workflow.notebook_name.rsplit(".", 1)[0].lower()
    name = re.sub(r"[^a-z0-9._-]+", "-", stem).strip("-._") or "notebook"
    digest = hashlib.sha256((lock.requirements_text() + (base or "")).encode()).hexdigest()[:12]
    return f"nb2cwl-{kind}-{name}:{digest}"


def write_step_image(workflow: Workflow, folder: str, base: str | None = None,
                     force: bool = False, tag: str | None = None) -> tuple[EnvironmentLock, str]:
    """Write the build folder (Dockerfile, requirements.txt); refuse a folder holding
    anything else unless `force`. Returns the lock and the image's tag (`tag`, else
    default_tag's)."""
    where = Location(workflow.notebook_name)
    if os.path.isfile(folder):
        raise BackendError(f"{folder} is a file; give a folder for the image's recipe", where)
    other = sorted(set(os.listdir(folder)) - {DOCKERFILE, REQUIREMENTS}) \
        if os.path.isdir(folder) else []
    if other and not force:
        raise BackendError(f"{folder} holds other files ({', '.join(other[:3])}); give an "
                           "empty or new folder, or --force", where)
    lock = lock_environment(workflow, engine=False)
    tag = tag or default_tag(workflow, lock, base)
    os.makedirs(folder, exist_ok=True)
    pins = [f"# Written by nb2cwl image for {workflow.notebook_name}: what this environment "
            "has of its imports, cloudpickle and IPython,",
            f"# on Python {lock.python} ({lock.implementation}, {lock.platform})."]
    pins += [line for line in lock.requirements_text().splitlines()[3:] if line]
    Path(folder, REQUIREMENTS).write_text("\n".join(pins) + "\n", encoding="utf-8")
    header = [f"The step image of {workflow.notebook_name}, written by nb2cwl image: Python "
              f"{lock.python} and the", "exact packages this environment has of what its "
              "cells import, cloudpickle and IPython", f"({REQUIREMENTS}). Build it:",
              f"  docker build -t {tag} {folder}",
              "(--build-arg BASE=IMAGE builds on another image with python3; pins it already "
              "has are kept)."]
    Path(folder, DOCKERFILE).write_text(container_recipe(lock, REQUIREMENTS, header, base),
                                        encoding="utf-8")
    return lock, tag


def build_image(folder: str, tag: str, where: Location) -> None:
    """`docker build -t TAG FOLDER`; Docker's own cause in one line when it fails, and no
    container left behind."""
    try:
        # --force-rm: the legacy builder otherwise keeps a failed step's container
        done = subprocess.run(["docker", "build", "--force-rm", "-t", tag, folder],
                              capture_output=True, text=True)
    except FileNotFoundError:
        raise BackendError("docker is not installed here: build the image where it is, with "
                           f"docker build -t {tag} {folder}", where) from None
    if done.returncode != 0:
        raise BackendError(f"docker build of {folder} failed: "
                           f"{build_failure(done.stdout, done.stderr)}", where)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_PROGRESS = ("Step ", "---> ", "Sending build context", "Removing intermediate", "#")
_NOTICES = ("[notice]", "WARNING:")
_BUILDKIT_OUTPUT = re.compile(r"^#\d+ \d+(\.\d+)? (.+)$")


def build_failure(stdout: str, stderr: str) -> str:
    """What went wrong, from docker build's output: the failing command's last words and how
    it ended (the legacy builder), or BuildKit's ERROR line, or the client's last line."""
    out = [_ANSI.sub("", line).strip() for line in stdout.splitlines()]
    out = [line for line in out if line and not line.startswith(_PROGRESS + _NOTICES)]
    err = [_ANSI.sub("", line).strip() for line in stderr.splitlines()]
    err = [line for line in err if line and not line.startswith(
        ("DEPRECATED", "Install the buildx", "https://"))]
    ended = next((line for line in err if "returned a non-zero code" in line), None)
    if ended is not None:
        status = ended.rsplit(":", 1)[-1].strip()
        said = out[-1] if out else "no output"
        return f"{said} (a RUN step of the Dockerfile exited with status {status})"
    failed = [line for line in err if line.startswith("ERROR")]
    if failed and "did not complete successfully" in failed[-1]:
        # BuildKit: the failing command's own last words, before its ERROR lines
        said = [m.group(2) for line in stdout.splitlines() + stderr.splitlines()
                if (m := _BUILDKIT_OUTPUT.match(_ANSI.sub("", line).strip()))
                and not m.group(2).startswith(("ERROR", "[notice]", "WARNING:"))]
        code = failed[-1].rsplit(":", 1)[-1].strip()
        if said:
            return f"{said[-1]} (a RUN step of the Dockerfile exited with status {code})"
    return (failed or err or out or ["docker build failed without a message"])[-1]
