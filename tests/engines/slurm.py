"""A real single-node Slurm cluster on localhost: munged, slurmctld and slurmd.

Debian's slurmctld, slurmd, slurm-client and munge are installed when missing. Everything else
(configuration, munge key and socket, state, spool, logs, pid files) lives under one temporary
directory; nothing is written to /etc. Clients need SLURM_CONF, which the session fixture
exports for the tests and for the StreamFlow processes they start. Finished jobs are recorded
by Slurm itself in a job completion log (jobcomp/filetxt), as there is no slurmdbd for sacct.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from engines import (
    EngineError,
    apt_install,
    engine_unavailable,
    run,
    start_daemon,
    stop_daemon,
    wait_for,
)

PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
BINARIES = ("slurmctld", "slurmd", "sbatch", "munged")


@dataclass
class SlurmCluster:
    """A running test cluster; `conf` is what SLURM_CONF must name."""

    base: Path
    conf: Path
    jobcomp: Path
    node: str
    cpus: int
    daemons: list[subprocess.Popen[bytes]] = field(default_factory=list)  # munged, ctld, slurmd

    @property
    def env(self) -> dict[str, str]:
        """The environment Slurm's clients need."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def completed_jobs(self) -> dict[str, dict[str, str]]:
        """Slurm's job completion log: job id -> its fields (JobState, WorkDir, ProcCnt, ...)."""
        jobs = {}
        if self.jobcomp.exists():
            for line in self.jobcomp.read_text().splitlines():
                fields = dict(p.split("=", 1) for p in line.split() if "=" in p)
                if "JobId" in fields:
                    jobs[fields["JobId"]] = fields
        return jobs

    def queued_jobs(self) -> list[str]:
        """Ids of jobs still pending or running."""
        out = run(["squeue", "-h", "-o", "%A"], env=self.env, check=False).stdout
        return out.split()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def common_settings(jobcomp: Path) -> str:
    """The lines of slurm.conf both test clusters share (no cgroups, no accounting database)."""
    return f"""\
MailProg=/bin/true
# no cgroups here: /proc based process tracking, no task confinement
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
# no slurmdbd (so no sacct): finished jobs go to a flat file, and stay in scontrol for an hour
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={jobcomp}
MinJobAge=3600
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2"""


def _write_config(base: Path) -> SlurmCluster:
    for sub in ("etc", "state", "spool", "log", "run", "munge"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o755)  # munged wants a socket directory others can traverse
    os.chmod(base / "munge", 0o755)
    key = base / "munge" / "munge.key"
    if run(["mungekey", "--create", f"--keyfile={key}"], check=False).returncode != 0:
        key.write_bytes(os.urandom(1024))
    os.chmod(key, 0o600)
    node_line = run(["slurmd", "-C"]).stdout.splitlines()[0]  # this machine, as slurmd sees it
    node = node_line.split()[0].removeprefix("NodeName=")
    cpus = int(next(p for p in node_line.split() if p.startswith("CPUs=")).split("=")[1])
    conf = base / "etc" / "slurm.conf"
    jobcomp = base / "log" / "jobcomp.txt"
    conf.write_text(f"""\
# single-node test cluster written by tests/engines/slurm.py; everything under {base}
ClusterName=nb2cwltest
SlurmctldHost={node}(127.0.0.1)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={base}/munge/munge.socket.2
SlurmUser=root
SlurmdUser=root
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
StateSaveLocation={base}/state
SlurmdSpoolDir={base}/spool
SlurmctldPidFile={base}/run/slurmctld.pid
SlurmdPidFile={base}/run/slurmd.pid
SlurmctldLogFile={base}/log/slurmctld.log
SlurmdLogFile={base}/log/slurmd.log
{common_settings(jobcomp)}
{node_line} NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
    os.chmod(conf, 0o644)
    return SlurmCluster(base, conf, jobcomp, node, cpus)


def start_cluster(base: Path) -> SlurmCluster:
    """Install if needed, configure, start the daemons and wait for an idle node."""
    apt_install(PACKAGES, BINARIES)
    cluster = _write_config(base)
    env = cluster.env
    munge = base / "munge"
    socket_path = munge / "munge.socket.2"
    # in the foreground, as children of this session: they die with it (see start_daemon)
    cluster.daemons.append(start_daemon(
        ["munged", "--foreground", f"--key-file={munge / 'munge.key'}",
         f"--socket={socket_path}", f"--pid-file={munge / 'munged.pid'}",
         f"--log-file={munge / 'munged.log'}", f"--seed-file={munge / 'munged.seed'}"],
        munge / "munged.out"))
    try:
        wait_for(lambda: run(["sh", "-c", f"munge -S {socket_path} -n | unmunge -S "
                              f"{socket_path}"], check=False).returncode == 0,
                 20, "munged answering")
        cluster.daemons.append(start_daemon(["slurmctld", "-D", "-f", str(cluster.conf)],
                                            base / "log" / "slurmctld.out", env))
        wait_for(lambda: "UP" in run(["scontrol", "ping"], env=env, check=False).stdout, 30,
                 "slurmctld answering")
        cluster.daemons.append(start_daemon(["slurmd", "-D", "-f", str(cluster.conf)],
                                            base / "log" / "slurmd.out", env))

        def idle() -> bool:
            state = run(["sinfo", "-h", "-N", "-o", "%t"], env=env, check=False).stdout.split()
            return bool(state) and state[0].rstrip("*") in ("idle", "mix", "alloc")

        wait_for(idle, 30, "the node becoming idle")
    except EngineError as exc:
        logs = "\n".join((base / "log" / f).read_text()[-800:]
                         for f in ("slurmctld.log", "slurmd.log") if (base / "log" / f).exists())
        stop_cluster(cluster)
        raise EngineError(f"{exc}\n{logs}") from None
    return cluster


def stop_cluster(cluster: SlurmCluster) -> None:
    """Cancel leftover jobs by id, then stop slurmd, slurmctld and munged (by pid)."""
    if len(cluster.daemons) >= 2 and cluster.daemons[1].poll() is None:
        leftover = cluster.queued_jobs()
        if leftover:
            run(["scancel", *leftover], env=cluster.env, check=False)
            with contextlib.suppress(EngineError):
                wait_for(lambda: not cluster.queued_jobs(), 15, "cancelled jobs leaving")
    for daemon in reversed(cluster.daemons):
        stop_daemon(daemon)
    cluster.daemons.clear()


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    """A running Slurm cluster for the session; SLURM_CONF is exported while it runs."""
    # not under pytest's basetemp: munged wants every directory above its socket traversable
    base = Path(tempfile.mkdtemp(prefix="nb2cwl-slurm-"))
    try:
        cluster = start_cluster(base)
    except (EngineError, OSError) as exc:
        shutil.rmtree(base, ignore_errors=True)
        engine_unavailable(f"no Slurm cluster: {exc}")
    previous = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(cluster.conf)
    try:
        yield cluster
    finally:
        if previous is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = previous
        stop_cluster(cluster)
        shutil.rmtree(base, ignore_errors=True)
