"""Steps bound to Slurm run as jobs of a real Slurm cluster started on this machine.

Proof that a step ran as a Slurm job: the job id in the step's own environment (printed by the
cell), and the same id in Slurm's job completion log, COMPLETED, with the resources asked for.
That a signal to `nb2cwl run` cancels the run's jobs is tested in test_stopping.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from deployment_cases import run_notebook, tuned_profile, write_notebook
from engines.slurm import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.streamflow]


def _profile(tmp_path: Path) -> Path:
    """The slurm profile, polling every second (the default 5 s doubles the run time)."""
    return tuned_profile("slurm", tmp_path / "slurm.yml", pollingInterval=1,
                         maxConcurrentJobs=4)


def _job(text: str) -> str | None:
    found = re.search(r"job=(\S+)", text)
    return None if found is None or found.group(1) == "None" else found.group(1)


def test_every_step_runs_as_a_slurm_job(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    notebook = write_notebook(
        tmp_path / "everywhere.ipynb",
        "import os\nx = 20\nprint('job=' + str(os.environ.get('SLURM_JOB_ID')))",
        "y = x + 1\nprint('job=' + str(os.environ.get('SLURM_JOB_ID')))",
        "print('job=' + str(os.environ.get('SLURM_JOB_ID')), 'y*2 =', y * 2)",
    )
    before = set(slurm_cluster.completed_jobs())
    printed = run_notebook(notebook, tmp_path / "wf", "--deployment", "slurm",
                           "--deployment-file", str(_profile(tmp_path)),
                           "--granularity", "cell")  # cheap cells would share one step
    assert "y*2 = 42" in printed[2]
    jobs = [_job(text) for text in printed]
    assert all(j is not None and j.isdigit() for j in jobs), printed
    assert len(set(jobs)) == 3  # one job per step
    completed = {k: v for k, v in slurm_cluster.completed_jobs().items() if k not in before}
    assert set(jobs) <= set(completed)
    assert len(completed) == 4  # and one for assembling the executed notebook
    for fields in completed.values():
        assert fields["JobState"] == "COMPLETED" and fields["ExitCode"] == "0:0"
        assert fields["Name"] == "nb2cwl"  # the profile's service
    assert not slurm_cluster.queued_jobs()


def test_mixed_run_puts_the_parallel_loop_on_slurm(slurm_cluster: SlurmCluster,
                                                   tmp_path: Path) -> None:
    cores = min(2, slurm_cluster.cpus)
    notebook = write_notebook(
        tmp_path / "mixed.ipynb",
        "import os\nfrom nb2cwl import parallel_task\nitems = list(range(6))",
        "@parallel_task\ndef square(i):\n    return i * i, os.environ.get('SLURM_JOB_ID')",
        "results = [square(i) for i in items]",
        "print([r for r, _ in results])\n"
        "print('jobs=' + ','.join(sorted({str(j) for _, j in results})))\n"
        "print('job=' + str(os.environ.get('SLURM_JOB_ID')))",
    )
    before = set(slurm_cluster.completed_jobs())
    printed = run_notebook(
        notebook, tmp_path / "wf", "--target", "@map=slurm", "--target", "*=local",
        "--resources", f"@map=cores={cores},memory=200M", "--chunks", "2",
        "--deployment-file", str(_profile(tmp_path)))
    assert "[0, 1, 4, 9, 16, 25]" in printed[3]
    assert _job(printed[3]) is None  # the gather and the rest ran locally
    map_jobs = re.search(r"jobs=(\S+)", printed[3]).group(1).split(",")
    assert len(map_jobs) == 2 and all(j.isdigit() for j in map_jobs)  # one job per chunk
    completed = {k: v for k, v in slurm_cluster.completed_jobs().items() if k not in before}
    assert set(completed) == set(map_jobs)  # nothing else went to Slurm
    for fields in completed.values():
        assert fields["JobState"] == "COMPLETED"
        assert fields["ProcCnt"] == str(cores)  # cpusPerTask from --resources
        assert f"cpu={cores}," in fields["Tres"] and "mem=200M" in fields["Tres"]


def test_a_job_slurm_rejects_is_one_line_with_slurms_reason(slurm_cluster: SlurmCluster,
                                                             tmp_path: Path) -> None:
    """A partition the cluster does not have: sbatch refuses the job, and nb2cwl says Slurm's
    own reason on one line, with what to do (not StreamFlow's traceback)."""
    import subprocess
    import sys

    notebook = write_notebook(tmp_path / "big.ipynb", "print('never runs')")
    profile = tuned_profile("slurm", tmp_path / "slurm.yml", pollingInterval=1,
                            services={"default": {"jobName": "nb2cwl", "partition": "nosuch"}})
    done = subprocess.run(
        [sys.executable, "-m", "nb2cwl", "run", str(notebook), "-o", str(tmp_path / "wf"),
         "--deployment", "slurm", "--deployment-file", str(profile), "--quiet"],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("nb2cwl: error:")]
    assert len(errors) == 1, done.stderr[-3000:]
    assert "sbatch: error:" in errors[0] and "Slurm rejected the job" in errors[0], errors[0]
    assert "Traceback" not in done.stderr
    assert not slurm_cluster.queued_jobs()


def test_a_job_the_partition_can_never_run_fails_instead_of_waiting(
        slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    """This cluster, like many, does not set EnforcePartLimits: sbatch accepts a job asking for
    two nodes of a one-node partition, and Slurm leaves it pending for ever (PartitionConfig).
    The run fails within seconds with Slurm's reason instead, and the job is cancelled."""
    import subprocess
    import sys
    import time

    # cell_1's job runs while cell_0's waits for ever: the refusal is cell_0's, whichever
    # step's polling sees it first
    notebook = write_notebook(tmp_path / "wide.ipynb", "print('never runs')",
                              "import time\ntime.sleep(4)\nprint('fits')")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "nb2cwl", "run", str(notebook), "-o", str(tmp_path / "wf"),
         "--deployment", "slurm", "--granularity", "cell", "--resources", "cell_0=nodes=2",
         "--deployment-file", str(_profile(tmp_path)), "--quiet"],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert time.monotonic() - started < 60
    errors = [line for line in done.stderr.splitlines() if line.startswith("nb2cwl: error:")]
    assert len(errors) == 1, done.stderr[-3000:]
    assert "step cell_0 failed: Slurm will not start job" in errors[0], errors[0]
    assert "reason PartitionConfig" in errors[0] and "partition debug" in errors[0], errors[0]
    assert "Slurm rejected the job: ask for what the partition offers" in errors[0]
    assert "Traceback" not in done.stderr
    assert not slurm_cluster.queued_jobs()
