"""Start a training step's worker processes, and describe the cluster they form.

The launcher (`launch_workers`) starts one worker per Slurm task with `srun`, or
NB2CWL_LOCAL_WORKERS=N local processes joined through TF_CONFIG on localhost; a worker that
fails has the others killed, and a worker whose peers never arrive gives up after
NB2CWL_RENDEZVOUS_TIMEOUT seconds (default 300), since TensorFlow would wait an hour. On
Slurm, the launcher also watches the job's other nodes (node_watch.py): a node lost with its
worker ends the step as a failed worker does.

Imports nothing from nb2cwl.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from .node_watch import NodeWatch, grace, job_nodes

WORKER_FLAG = "NB2CWL_WORKER"


def launch_workers(argv: list[str]) -> int | None:
    """Start this step's worker processes and wait for them; None when this process is the
    only worker (or one of several already started)."""
    if os.environ.get(WORKER_FLAG):
        _enter_worker_directory(argv)
        return None
    tasks = int(os.environ.get("SLURM_NTASKS", "1") or 1)
    if os.environ.get("SLURM_JOB_ID") and tasks > 1 and shutil.which("srun"):
        command = ["srun", "--kill-on-bad-exit=1", f"--ntasks={tasks}",
                   f"--export=ALL,{WORKER_FLAG}=1", sys.executable,
                   os.path.abspath(sys.argv[0]), *argv]
        srun = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, errors="replace")
        reader = threading.Thread(target=_read_srun_errors, args=(srun.stderr,), daemon=True)
        reader.start()
        watch = NodeWatch(job_nodes(_job_workers()), grace()).start()
        try:
            return _wait_all([srun], lambda index, code: _srun_cause(reader, code), watch)
        finally:
            watch.stop()
            reader.join(timeout=5)
    local = int(os.environ.get("NB2CWL_LOCAL_WORKERS", "1") or 1)
    if local > 1:
        return _local_workers(local, argv)
    return None


def _local_workers(count: int, argv: list[str]) -> int:
    ports = _free_ports(count)
    cluster = {"worker": [f"localhost:{port}" for port in ports]}
    script = os.path.abspath(sys.argv[0])
    absolute = _absolute_paths(argv)
    processes, scratch = [], []
    for index in range(count):
        env = dict(os.environ, **{WORKER_FLAG: "1", "TF_CONFIG": json.dumps(
            {"cluster": cluster, "task": {"type": "worker", "index": index}})})
        cwd = None
        if index:  # other workers write their copies elsewhere: only the chief's are kept
            cwd = tempfile.mkdtemp(prefix=f"nb2cwl-worker{index}-")
            scratch.append(cwd)
        processes.append(subprocess.Popen([sys.executable, script, *absolute], env=env,
                                          cwd=cwd))
    try:
        return _wait_all(processes)
    finally:
        for folder in scratch:
            shutil.rmtree(folder, ignore_errors=True)


#: Why the training workers failed: the first worker to fail, where it ran and how it ended
#: ("training worker 1 on node2: Killed"); None while none has.
failure: str | None = None

_SRUN_TASK_ERROR = re.compile(r"srun: error: (\S+): tasks? ([\d,-]+): (.+)")
_srun_errors: list[str] = []


def _read_srun_errors(stream: Any) -> None:
    """Pass srun's (and the workers') stderr on, keeping what srun says of failed tasks."""
    for line in stream:
        sys.stderr.write(line)
        found = _SRUN_TASK_ERROR.search(line)
        if found:
            node, task, what = found.groups()
            _srun_errors.append(f"training worker {task} on {node}: {what.strip()}")


def _srun_cause(reader: threading.Thread, code: int) -> str:
    reader.join(timeout=5)  # srun has ended: its last lines are on their way
    return _srun_errors[0] if _srun_errors else f"a training worker failed (srun exit {code})"


def _local_cause(index: int, code: int) -> str:
    how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit {code}"
    return f"training worker {index} on this machine: {how}"


def _wait_all(processes: list[subprocess.Popen], cause: Any = _local_cause,
              watch: NodeWatch | None = None) -> int:
    """Wait for every worker; when one fails, or its node is lost (`watch`), kill the rest
    (they would wait for it), and say which failed, where and how (`failure`)."""
    global failure
    try:
        while True:
            if watch is not None and watch.lost is not None:
                for process in processes:
                    process.kill()  # srun: Slurm ends the tasks left as the job ends
                failure = f"{watch.cause()}; the other workers were stopped"
                sys.stderr.write(f"nb2cwl: {failure}\n")
                return 1
            codes = [p.poll() for p in processes]
            failed = [(i, c) for i, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                for process in processes:
                    if process.poll() is None:
                        process.kill()  # SIGKILL: a waiting TensorFlow worker ignores SIGTERM
                index, code = failed[0]
                failure = f"{cause(index, code)}; the other workers were stopped"
                sys.stderr.write(f"nb2cwl: {failure}\n")
                return code if code > 0 else 1
            if all(c == 0 for c in codes):
                return 0
            time.sleep(0.1)
    except KeyboardInterrupt:
        for process in processes:
            process.kill()
        raise


def _free_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("localhost", 0))
            sockets.append(sock)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _enter_worker_directory(argv: list[str]) -> None:
    """A Slurm worker other than the first runs in a scratch folder (its copies are dropped)."""
    if int(os.environ.get("SLURM_PROCID", "0") or 0) == 0:
        return
    argv[:] = _absolute_paths(argv)
    os.chdir(tempfile.mkdtemp(prefix="nb2cwl-worker-"))


def _absolute_paths(argv: list[str]) -> list[str]:
    """The step's arguments with relative paths made absolute (for a worker elsewhere)."""
    return [os.path.abspath(a) if not a.startswith("--") and os.path.exists(a) else a
            for a in argv]


def is_chief() -> bool:
    """True for the worker whose outputs the workflow keeps."""
    config = json.loads(os.environ.get("TF_CONFIG", "{}") or "{}")
    index = config.get("task", {}).get("index", 0)
    return index == 0 and int(os.environ.get("SLURM_PROCID", "0") or 0) == 0


def worker_count() -> int:
    config = json.loads(os.environ.get("TF_CONFIG", "{}") or "{}")
    workers = len(config.get("cluster", {}).get("worker", []))
    if workers:
        return workers
    if os.environ.get(WORKER_FLAG) and os.environ.get("SLURM_STEP_NUM_TASKS"):
        return int(os.environ["SLURM_STEP_NUM_TASKS"])
    return 1


def port_base() -> int:
    return 20000 + int(os.environ.get("SLURM_JOB_ID", "0")) % 10000 * 4


def slurm_tf_config() -> dict[str, Any]:
    """TF_CONFIG for the Slurm step this worker is a task of (one port per task)."""
    hosts = subprocess.run(["scontrol", "show", "hostnames",
                            os.environ["SLURM_STEP_NODELIST"]], capture_output=True,
                           text=True, check=True).stdout.split()
    per_node = _tasks_per_node(os.environ.get("SLURM_STEP_TASKS_PER_NODE", "1"), len(hosts))
    base = port_base()
    workers = [f"{host}:{base + local}" for host, count in zip(hosts, per_node, strict=True)
               for local in range(count)]
    return {"cluster": {"worker": workers},
            "task": {"type": "worker", "index": int(os.environ["SLURM_PROCID"])}}


def _job_workers() -> dict[str, list[tuple[int, int]]]:
    """The (task index, port) of every worker of the job's step, by node, as each worker will
    compute its own (slurm_tf_config)."""
    try:
        hosts = subprocess.run(["scontrol", "show", "hostnames",
                                os.environ.get("SLURM_JOB_NODELIST", "")], capture_output=True,
                               text=True, timeout=30).stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        return {}
    per_node = _tasks_per_node(os.environ.get("SLURM_TASKS_PER_NODE", "1"), len(hosts))
    base, task, workers = port_base(), 0, {}
    for host, count in zip(hosts, per_node, strict=True):
        workers[host] = [(task + local, base + local) for local in range(count)]
        task += count
    return workers


def _tasks_per_node(text: str, nodes: int) -> list[int]:
    """Slurm's `2(x3),1` as [2, 2, 2, 1]."""
    counts: list[int] = []
    for part in text.split(","):
        if "(x" in part:
            value, repeat = part.split("(x")
            counts += [int(value)] * int(repeat.rstrip(")"))
        else:
            counts.append(int(part))
    return counts[:nodes] if len(counts) >= nodes else counts + [1] * (nodes - len(counts))

