"""Notice that a node of a multi-node training step is gone (the machine down or cut off).

When a node is lost with everything on it (slurmd, slurmstepd, the worker), nothing tells the
workers left: TensorFlow waits for its peer, srun hears nothing from that node, and Slurm
notices only after SlurmdTimeout (minutes). The launcher therefore watches every other node of
the job from its own: a node is lost once neither its slurmd nor the worker's port on it has
answered a TCP connection for `grace` seconds. Either one answering is enough: slurmd
restarted by an administrator leaves the worker running, and a worker that has not started
yet, or has finished, leaves slurmd running.

Without it, a lost node holds the run until Slurm's SlurmdTimeout, and longer: srun waits for
the lost node's task, and the worker left waits for its peer.

Imports nothing from nb2cwl.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import threading
import time
from dataclasses import dataclass

GRACE_ENV = "NB2CWL_NODE_GRACE"
GRACE = 15.0  # seconds without an answer before a node counts as lost
_EVERY = 2.0  # seconds between two looks
_CONNECT = 3.0  # seconds a connection may take (a machine that is down does not refuse)


@dataclass
class Node:
    """One node of the job as the launcher sees it."""

    name: str
    address: str
    slurmd_port: int
    worker_ports: tuple[int, ...]
    tasks: tuple[int, ...]  # the training workers' indices on it
    silent_since: float | None = None


class NodeWatch:
    """Watches the job's other nodes in a thread; `lost` is the first one gone."""

    def __init__(self, nodes: list[Node], grace: float = GRACE) -> None:
        self.nodes = nodes
        self.grace = grace
        self.lost: Node | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> NodeWatch:
        if self.nodes:
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(_EVERY) and self.lost is None:
            now = time.monotonic()
            for node in self.nodes:
                # the worker first: slurmd only hears from us while the worker is not up
                if any(_answers(node.address, port) for port in node.worker_ports) or _answers(
                        node.address, node.slurmd_port):
                    node.silent_since = None
                    continue
                if node.silent_since is None:
                    node.silent_since = now
                elif now - node.silent_since >= self.grace:
                    self.lost = node
                    return

    def cause(self) -> str:
        """What happened, for the step's failure line."""
        node = self.lost
        assert node is not None
        workers = ", ".join(str(t) for t in node.tasks)
        return (f"training worker{'s' if len(node.tasks) > 1 else ''} {workers} on {node.name}: "
                f"the node stopped answering (neither its slurmd nor the worker for "
                f"{self.grace:g} s: the machine is down or cut off)")


def _answers(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=_CONNECT):
            return True
    except OSError:
        return False


def job_nodes(workers: dict[str, list[tuple[int, int]]]) -> list[Node]:
    """The job's nodes other than this one, from the (task index, port) of the workers each
    will have (`workers` by node name); [] when Slurm cannot say."""
    names = list(workers)
    here = os.environ.get("SLURMD_NODENAME", "")
    try:
        shown = subprocess.run(["scontrol", "show", "-o", "node", ",".join(names)],
                               capture_output=True, text=True, timeout=30).stdout
        config = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True,
                                timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    default = re.search(r"^SlurmdPort\s*=\s*(\d+)", config, re.M)
    nodes = []
    for line in shown.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S+)", line))
        name = fields.get("NodeName", "")
        if name not in workers or name == here:
            continue
        port = fields.get("Port") or (default.group(1) if default else "6818")
        nodes.append(Node(name, fields.get("NodeAddr", name), int(port),
                          tuple(p for _, p in workers[name]), tuple(t for t, _ in workers[name])))
    return nodes


def grace() -> float:
    return float(os.environ.get(GRACE_ENV, "") or GRACE)
