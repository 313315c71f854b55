"""What went wrong in StreamFlow, in one line with what to do: the cause its log names (Docker's,
Slurm's, a missing program), not the traceback that follows it."""

from __future__ import annotations

import os
import re
import shutil
import sys

#: A record of StreamFlow's log: its timestamp and level start a line.
_RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ (\w+)\s+(.*)$")
#: Causes users meet, and what to do about each (the first that matches).
ADVICE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Cannot connect to the Docker daemon|docker\.sock.*(permission denied|no "
                r"such file)", re.I),
     "start Docker (or point DOCKER_HOST at its socket), or choose another --deployment"),
    (re.compile(r"Unable to find image|pull access denied|manifest unknown|No such image", re.I),
     "build or load the image on that Docker host first (see --image), or choose another "
     "image"),
    (re.compile(r"\b(sbatch|squeue|scancel|srun)\b.*(command not found|No such file)", re.I),
     "run where Slurm's commands are installed (a login node), or choose another "
     "--deployment"),
    (re.compile(r"Batch job submission failed|Invalid partition|Requested node configuration "
                r"is not available|Invalid account|QOSMax|exceeded|Slurm will not start", re.I),
     "Slurm rejected the job: ask for what the partition offers (--resources, or the "
     "deployment's partition in --deployment-file)"),
    (re.compile(r"Unable to contact slurm controller|slurm_load_partitions|Connection refused",
                re.I),
     "Slurm's controller does not answer: check that the cluster is up (sinfo)"),
    (re.compile(r"\b(helm|kubectl)\b.*(command not found|No such file)", re.I),
     "install helm and a Kubernetes configuration, or choose another --deployment"),
    (re.compile(r"^step \S+ failed: Killed$"),
     "its process was killed (by a signal, or for lack of memory): run again, or give "
     "--retries N for StreamFlow to run such a step again"),
    (re.compile(r"command not found|No such file or directory", re.I),
     "install the program it names where the step runs, or choose another --deployment"),
)


def engine_cause(log: str) -> str | None:
    """The first error StreamFlow's log records, on one line, with what to do; None if it
    records none."""
    lines = log.splitlines()
    for number, line in enumerate(lines):
        record = _RECORD.match(line)
        if record is None or record.group(1) != "ERROR":
            continue
        message = [record.group(2).strip()]
        for following in lines[number + 1:]:
            if _RECORD.match(following) or following.startswith("Traceback"):
                break
            if following.strip() and not following.startswith("Run '"):  # docker's usage hint
                message.append(following.strip())
        text = " ".join(message).strip()
        if text in ("FAILED Workflow execution", ""):
            continue
        cause = _with_its_step(_cleaned(text), log)
        advice = next((what for pattern, what in ADVICE if pattern.search(cause)), None)
        return f"{cause}; {advice}" if advice else cause
    return None


def _cleaned(text: str) -> str:
    """StreamFlow's wording, shortened: `FAILED Deployment of docker environment [125]: X`
    becomes `deployment docker could not start (status 125): X`, and `FAILED Job /cell_2/0
    with error: X` becomes `step cell_2 failed: X`."""
    deployment = re.match(r"FAILED [Dd]eployment of (\S+) environment \[(\d+)\]:\s*(.*)", text)
    if deployment:
        name, status, rest = deployment.groups()
        return f"deployment {name} could not start (status {status}): {rest}"
    job = re.match(r"FAILED Job /(\S+?)/\d+ with error:\s*(.*)", text, re.S)
    if job:  # `FAILED Job /cell_2/0 with error: Killed`: the step and its error
        step, rest = job.groups()
        error = re.sub(r"\s+", " ", rest).strip()
        return f"step {step} failed: {error}"
    return re.sub(r"\s+", " ", text)


def _with_its_step(cause: str, log: str) -> str:
    """A Slurm job's refusal (nb2cwl.slurm_queue) with the step whose job it is, from the
    line where StreamFlow logged the job's id."""
    refused = re.match(r"Slurm will not start job (\S+):", cause)
    if refused is None:
        return cause
    scheduled = re.search(rf"Scheduled job /(\S+?)/\d+ with job id {re.escape(refused.group(1))}$",
                          log, re.M)
    return f"step {scheduled.group(1)} failed: {cause}" if scheduled else cause


def missing_library_advice(message: str, python: str) -> str | None:
    """For a step that failed on an import: which interpreter the local steps run with (the
    environment nb2cwl runs in puts its own first on their PATH, see launch.Engine), and what
    to do; None for other failures."""
    if "ModuleNotFoundError: " not in message:
        return None
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    found = shutil.which(python, path=path) or python
    return (f"hint: local steps run with {found} (--python; default: python3 of the "
            "environment nb2cwl runs in); install the library there, or run nb2cwl from the "
            "notebook's own environment, or name its Python with --python")
