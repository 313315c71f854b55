"""A real two-node Slurm cluster on this machine: each node's slurmd in a network namespace.

Layout (every name carries a random id, so two test sessions never share one):
- a bridge `n2c<id>br` with 10.231.<k>.1/24 in the root namespace, where munged, slurmctld
  and Slurm's clients (sbatch, squeue, StreamFlow) run;
- per node i, a network namespace `n2c<id>n<i>` whose `eth0` has 10.231.<k>.1<i>, joined to
  the bridge by a veth pair; no default route, no forwarding: the nodes reach only the
  addresses made here;
- slurmd of node i entered into its namespace with `nsenter --net` (not `ip netns exec`, which
  remounts /sys and hides the cgroup mounts slurmd wants), then `unshare --uts --mount` to give
  it the hostname `node<i>` and a private /etc/hosts (a bind mount of this cluster's hosts
  file) that names node1 and node2. Jobs and their `srun` tasks inherit all three, so the
  tasks of one job on two nodes really talk TCP between two addresses.

Each node declares 1 CPU (`SlurmdParameters=config_overrides`), so a job of two tasks, or two
one-task jobs at once, must use both nodes. Everything else lives under one temporary
directory; nothing is written to /etc. Finished jobs are in Slurm's job completion log.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from engines import EngineError, engine_unavailable, run, start_daemon, wait_for
from engines.slurm import (
    BINARIES,
    PACKAGES,
    SlurmCluster,
    apt_install,
    common_settings,
    stop_cluster,
)

NODES = ("node1", "node2")
NEEDED = ("ip", "nsenter", "unshare")


@dataclass
class TwoNodeCluster(SlurmCluster):
    """The test cluster, and the prefix and subnet of the network objects it made."""

    prefix: str = ""
    subnet: str = ""

    def address(self, node: str) -> str:
        return f"{self.subnet}.1{NODES.index(node) + 1}"

    def namespace(self, node: str) -> str:
        return f"{self.prefix}n{NODES.index(node) + 1}"

    def node_states(self) -> dict[str, str]:
        out = run(["sinfo", "-h", "-N", "-o", "%N %t"], env=self.env, check=False).stdout
        return dict(line.split() for line in out.splitlines() if len(line.split()) == 2)


def _free_subnet() -> str:
    used = run(["ip", "-4", "-o", "addr", "show"]).stdout
    for _ in range(50):
        subnet = f"10.231.{secrets.randbelow(250) + 1}"
        if f" {subnet}." not in used:
            return subnet
    raise EngineError("no free 10.231.x.0/24 subnet for the two-node cluster")


def _no_ipv6(interface: str, namespace: str | None = None) -> None:
    """No router solicitations or DAD packets: only IPv4 inside the cluster's subnet."""
    setting = f"/proc/sys/net/ipv6/conf/{interface}/disable_ipv6"
    command = ["sh", "-c", f"[ -w {setting} ] && echo 1 > {setting} || true"]
    run(["ip", "netns", "exec", namespace, *command] if namespace else command, check=False)


def _network_up(cluster: TwoNodeCluster) -> None:
    bridge = f"{cluster.prefix}br"
    run(["ip", "link", "add", bridge, "type", "bridge"])
    _no_ipv6(bridge)
    run(["ip", "addr", "add", f"{cluster.subnet}.1/24", "dev", bridge])
    run(["ip", "link", "set", bridge, "up"])
    for index, node in enumerate(NODES, 1):
        namespace, veth = cluster.namespace(node), f"{cluster.prefix}h{index}"
        run(["ip", "netns", "add", namespace])
        _no_ipv6("all", namespace)
        _no_ipv6("default", namespace)
        run(["ip", "-n", namespace, "link", "set", "lo", "up"])
        run(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns",
             namespace])
        _no_ipv6(veth)
        run(["ip", "-n", namespace, "addr", "add", f"{cluster.address(node)}/24", "dev",
             "eth0"])
        run(["ip", "link", "set", veth, "master", bridge, "up"])
        run(["ip", "-n", namespace, "link", "set", "eth0", "up"])


def _network_down(prefix: str) -> None:
    """Delete the namespaces, veths and bridge named with `prefix` (what is left of them)."""
    for index in range(1, len(NODES) + 1):
        namespace = f"{prefix}n{index}"
        if Path("/run/netns", namespace).exists():
            run(["ip", "netns", "del", namespace], check=False)
        run(["ip", "link", "del", f"{prefix}h{index}"], check=False)  # deleted asynchronously
    run(["ip", "link", "del", f"{prefix}br"], check=False)


def _write_config(base: Path, prefix: str, subnet: str) -> TwoNodeCluster:
    for sub in ("etc", "state", "spool", "log", "run", "munge"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o755)
    os.chmod(base / "munge", 0o755)
    key = base / "munge" / "munge.key"
    if run(["mungekey", "--create", f"--keyfile={key}"], check=False).returncode != 0:
        key.write_bytes(os.urandom(1024))
    os.chmod(key, 0o600)
    controller = socket.gethostname().split(".")[0]
    conf, jobcomp, hosts = base / "etc" / "slurm.conf", base / "log" / "jobcomp.txt", \
        base / "etc" / "hosts"
    cluster = TwoNodeCluster(base, conf, jobcomp, "node[1-2]", 1, prefix=prefix, subnet=subnet)
    hosts.write_text("127.0.0.1 localhost\n" f"{subnet}.1 {controller}\n" + "".join(
        f"{cluster.address(node)} {node}\n" for node in NODES))
    nodes = "".join(f"NodeName={node} NodeAddr={cluster.address(node)} NodeHostname={node} "
                    "CPUs=1 RealMemory=2000 State=UNKNOWN\n" for node in NODES)
    with socket.socket() as probe:  # the controller's port, in the root namespace
        probe.bind(("0.0.0.0", 0))
        port = probe.getsockname()[1]
    conf.write_text(f"""\
# two-node test cluster written by tests/engines/slurm_two_nodes.py; everything under {base}
ClusterName=nb2cwltwo
SlurmctldHost={controller}({subnet}.1)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={base}/munge/munge.socket.2
SlurmUser=root
SlurmdUser=root
SlurmctldPort={port}
SlurmdPort=6818
StateSaveLocation={base}/state
SlurmdSpoolDir={base}/spool/%n
SlurmctldPidFile={base}/run/slurmctld.pid
SlurmdPidFile={base}/run/slurmd.%n.pid
SlurmctldLogFile={base}/log/slurmctld.log
SlurmdLogFile={base}/log/slurmd.%n.log
{common_settings(jobcomp)}
# the declared one CPU per node, not the machine's cores
SlurmdParameters=config_overrides
# as most sites: a job no partition could ever run is refused at submission, not left pending
EnforcePartLimits=ALL
{nodes}PartitionName=debug Nodes=node[1-2] Default=YES MaxTime=INFINITE State=UP
""")
    for path in (conf, hosts):
        os.chmod(path, 0o644)
    return cluster


def start_node(cluster: TwoNodeCluster, node: str) -> subprocess.Popen[bytes]:
    """slurmd of `node` in its namespace, hostname and /etc/hosts (in the foreground)."""
    (cluster.base / "spool" / node).mkdir(parents=True, exist_ok=True)
    return start_daemon(
        ["nsenter", f"--net=/run/netns/{cluster.namespace(node)}", "unshare", "--uts",
         "--mount", "--propagation", "private", "--", "sh", "-c",
         'hostname "$1" && mount --bind "$2" /etc/hosts && exec slurmd -D -f "$3" -N "$1"',
         "sh", node, str(cluster.base / "etc" / "hosts"), str(cluster.conf)],
        cluster.base / "log" / f"slurmd.{node}.out", cluster.env)


def wait_idle(cluster: TwoNodeCluster, timeout: float = 40) -> None:
    def both_up() -> bool:
        states = cluster.node_states().values()
        return sum(s.rstrip("*") in ("idle", "mix", "alloc") for s in states) == len(NODES)

    wait_for(both_up, timeout, "both nodes becoming idle")


def start_two_nodes(base: Path) -> TwoNodeCluster:
    """Install if needed, make the network, configure, start the daemons, wait for 2 nodes."""
    apt_install(PACKAGES, BINARIES)
    if os.geteuid() != 0 or not all(shutil.which(b) for b in NEEDED):
        raise EngineError("the two-node cluster needs root and ip, nsenter and unshare")
    prefix, subnet = f"n2c{secrets.token_hex(2)}", _free_subnet()
    cluster = _write_config(base, prefix, subnet)
    env, munge = cluster.env, base / "munge"
    socket_path = munge / "munge.socket.2"
    try:
        _network_up(cluster)
        cluster.daemons.append(start_daemon(
            ["munged", "--foreground", f"--key-file={munge / 'munge.key'}",
             f"--socket={socket_path}", f"--pid-file={munge / 'munged.pid'}",
             f"--log-file={munge / 'munged.log'}", f"--seed-file={munge / 'munged.seed'}"],
            munge / "munged.out"))
        check = f"munge -S {socket_path} -n | unmunge -S {socket_path}"
        wait_for(lambda: run(["sh", "-c", check], check=False).returncode == 0, 20,
                 "munged answering")
        cluster.daemons.append(start_daemon(["slurmctld", "-D", "-f", str(cluster.conf)],
                                            base / "log" / "slurmctld.out", env))
        wait_for(lambda: "UP" in run(["scontrol", "ping"], env=env, check=False).stdout, 30,
                 "slurmctld answering")
        for node in NODES:
            cluster.daemons.append(start_node(cluster, node))
        wait_idle(cluster)
    except EngineError as exc:
        logs = "\n".join(f.read_text()[-600:] for f in sorted((base / "log").glob("*.log")))
        network = _network_state(cluster)
        stop_two_nodes(cluster)
        raise EngineError(f"{exc}\n{logs}\n{network}") from None
    return cluster


def _network_state(cluster: TwoNodeCluster) -> str:
    """What the controller's and the nodes' addresses look like now (for a failed start)."""
    commands = [["ip", "-4", "-o", "addr", "show"], ["ip", "route", "get", f"{cluster.subnet}.1"],
                ["ip", "route", "get", f"{cluster.subnet}.11"], ["ip", "netns", "list"],
                ["ss", "-ltnp"]]
    return "\n".join(f"$ {' '.join(c)}\n" + run(c, check=False).stdout[-1500:]
                     for c in commands if shutil.which(c[0]))


def stop_two_nodes(cluster: TwoNodeCluster) -> None:
    """Cancel leftover jobs, stop the daemons, then delete the namespaces, veths and bridge."""
    with contextlib.suppress(EngineError):
        stop_cluster(cluster)
    _network_down(cluster.prefix)


def _stale_networks() -> None:
    """Network objects of an earlier session killed before its clean-up (no process left)."""
    for namespace in Path("/run/netns").glob("n2c????n1") if Path("/run/netns").exists() \
            else []:
        if not run(["ip", "netns", "pids", namespace.name], check=False).stdout.strip():
            _network_down(namespace.name[:-2])


@pytest.fixture(scope="session")
def slurm_two_nodes() -> Iterator[TwoNodeCluster]:
    """A running two-node cluster for the session (tests set SLURM_CONF from `env`)."""
    first: Exception | None = None
    for _ in range(2):  # a second try in a fresh folder, subnet and port (the error: both)
        base = Path(tempfile.mkdtemp(prefix="nb2cwl-slurm2-"))
        try:
            _stale_networks()
            cluster = start_two_nodes(base)
            break
        except (EngineError, OSError) as exc:
            shutil.rmtree(base, ignore_errors=True)
            if first is not None:
                engine_unavailable(f"no two-node Slurm cluster: {first}\n"
                                   f"and again: {exc}")
            first = exc
    try:
        yield cluster
    finally:
        stop_two_nodes(cluster)
        shutil.rmtree(base, ignore_errors=True)
