"""An engine failure shows its real cause on one line, with what to do (issue 26, item 2):
Docker's, Slurm's, a missing program's, not StreamFlow's traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from deployment_cases import write_notebook
from engines import EngineError, apt_install
from engines.docker import BINARIES, PACKAGES

from nb2cwl.engine_errors import engine_cause

# StreamFlow 0.2.0rc3's log of a docker deployment whose daemon does not answer (a real run's)
DOCKER_DOWN = """\
2026-11-27 05:26:05.124 INFO     DEPLOYING docker
2026-11-27 05:26:05.248 ERROR    FAILED Deployment of docker environment [125]:
\tdocker: Cannot connect to the Docker daemon at unix:///tmp/none.sock. Is the docker daemon \
running?
Run 'docker run --help' for more information
Traceback (most recent call last):
  File "/x/streamflow/deployment/manager.py", line 1, in deploy
streamflow.core.exception.WorkflowExecutionException: FAILED Deployment of docker environment
2026-11-27 05:26:05.333 ERROR    FAILED Workflow execution
"""


def test_the_first_error_of_the_log_is_the_cause_with_what_to_do() -> None:
    cause = engine_cause(DOCKER_DOWN)
    assert cause == ("deployment docker could not start (status 125): docker: Cannot connect "
                     "to the Docker daemon at unix:///tmp/none.sock. Is the docker daemon "
                     "running?; start Docker (or point DOCKER_HOST at its socket), or choose "
                     "another --deployment")
    rejected = ("2026-11-27 05:00:00.001 ERROR    sbatch: error: Batch job submission failed: "
                "Requested node configuration is not available\n")
    assert engine_cause(rejected).endswith(
        "Slurm rejected the job: ask for what the partition offers (--resources, or the "
        "deployment's partition in --deployment-file)")
    missing = "2026-11-27 05:00:00.001 ERROR    /bin/sh: 1: sbatch: command not found\n"
    assert "run where Slurm's commands are installed" in engine_cause(missing)
    killed = ("2026-11-27 05:00:00.001 ERROR    FAILED Job /cell_2/0 with error: Killed\n"
              "2026-11-27 05:00:00.002 ERROR    FAILED Workflow execution\n")
    assert engine_cause(killed) == (
        "step cell_2 failed: Killed; its process was killed (by a signal, or for lack of "
        "memory): run again, or give --retries N for StreamFlow to run such a step again")
    assert engine_cause("2026-11-27 05:00:00.001 INFO     COMPLETED Step /cell_0\n") is None
    assert engine_cause("2026-11-27 05:00:00.001 ERROR    FAILED Workflow execution\n") is None


@pytest.mark.streamflow
@pytest.mark.xdist_group("engines")  # its apt-get runs where the Docker engine's does
def test_a_docker_deployment_without_a_daemon_says_so_in_one_line(tmp_path: Path) -> None:
    try:
        apt_install(PACKAGES, BINARIES)  # the real docker client; no daemon is started
    except EngineError as exc:
        pytest.skip(f"no docker client: {exc}")
    notebook = write_notebook(tmp_path / "nb.ipynb", "x = 1", "print(x + 1)")
    env = dict(os.environ, DOCKER_HOST=f"unix://{tmp_path / 'no-docker.sock'}")
    done = subprocess.run([sys.executable, "-m", "nb2cwl", "run", str(notebook), "-o",
                           str(tmp_path / "wf"), "--deployment", "docker", "--quiet"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("nb2cwl: error:")]
    assert len(errors) == 1, done.stderr[-3000:]
    assert "Cannot connect to the Docker daemon" in errors[0]
    assert "start Docker (or point DOCKER_HOST at its socket)" in errors[0]
    assert "Traceback" not in done.stderr


@pytest.mark.streamflow
def test_a_missing_library_says_which_python_the_steps_run_with(tmp_path: Path) -> None:
    notebook = write_notebook(tmp_path / "nb.ipynb", "x = 1",
                              "import not_a_library_anywhere\nprint(x)")
    done = subprocess.run([sys.executable, "-m", "nb2cwl", "run", str(notebook), "--quiet"],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PATH=os.path.dirname(sys.executable)
                                   + os.pathsep + os.environ["PATH"]))
    assert done.returncode == 1
    assert "ModuleNotFoundError: No module named 'not_a_library_anywhere'" in done.stderr
    hint = done.stderr.strip().splitlines()[-1]
    python = os.path.join(os.path.dirname(sys.executable), "python3")
    assert hint.startswith(f"hint: local steps run with {python} (--python"), hint
