"""The launcher's watch over the other nodes of a multi-node training step
(runtime/node_watch.py), on local sockets standing for a node's slurmd and worker."""

from __future__ import annotations

import socket
import time

import pytest

from nb2cwl.runtime import node_watch
from nb2cwl.runtime.node_watch import Node, NodeWatch


def _listening() -> socket.socket:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    return server


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(node_watch, "_EVERY", 0.05)


def _watch(slurmd: int, worker: int) -> NodeWatch:
    return NodeWatch([Node("node2", "127.0.0.1", slurmd, (worker,), (1,))], grace=0.5).start()


def _lost_within(watch: NodeWatch, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while watch.lost is None and time.monotonic() < deadline:
        time.sleep(0.05)
    watch.stop()
    return watch.lost is not None


def test_a_node_whose_slurmd_and_worker_both_stop_answering_is_lost() -> None:
    slurmd, worker = _listening(), _listening()
    watch = _watch(slurmd.getsockname()[1], worker.getsockname()[1])
    assert not _lost_within(watch, 1.0), "lost while both answer"
    watch = _watch(slurmd.getsockname()[1], worker.getsockname()[1])
    slurmd.close()
    worker.close()
    assert _lost_within(watch, 5)
    assert watch.cause() == ("training worker 1 on node2: the node stopped answering (neither "
                             "its slurmd nor the worker for 0.5 s: the machine is down or cut "
                             "off)")


@pytest.mark.parametrize("left", ["slurmd", "worker"])
def test_either_one_answering_keeps_the_node(left: str) -> None:
    """slurmd restarted by an administrator (the worker runs on); a worker not started yet or
    finished (slurmd runs on)."""
    alive = _listening()
    gone = _free_port()
    ports = (alive.getsockname()[1], gone) if left == "slurmd" else (gone, alive.getsockname()[1])
    try:
        assert not _lost_within(_watch(*ports), 1.5)
    finally:
        alive.close()
