"""Steps bound to Docker run in containers of a real Docker engine started on this machine.

The image is containers/Dockerfile.cpu built on a local Debian root file system (see
tests/engines/docker.py); its /etc/nb2cwl-image marker exists nowhere else, so a cell that reads
it proves it ran in the container. GPUs cannot be tested here: there is no GPU, nor the NVIDIA
container runtime that `gpus` needs.
"""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest
from deployment_cases import run_notebook, write_notebook, write_yaml
from engines.docker import DockerEngine

pytestmark = [pytest.mark.docker, pytest.mark.streamflow]
WHERE = ("import os, socket\n"
         "def where():\n"
         "    marker = '/etc/nb2cwl-image'\n"
         "    inside = open(marker).read().strip() if os.path.exists(marker) else 'host'\n"
         "    return f'{inside} on {socket.gethostname()}'")


def test_every_step_runs_in_the_container(docker_engine: DockerEngine, tmp_path: Path) -> None:
    notebook = write_notebook(
        tmp_path / "boxed.ipynb", WHERE,
        "x = 20\nprint('ran in', where())",
        "print('ran in', where(), x * 2 + 2)",
    )
    printed = run_notebook(notebook, tmp_path / "wf", "--deployment", "docker",
                           "--image", docker_engine.image)
    for text in printed[1:]:
        found = re.search(r"ran in (.+) on (\S+)", text)
        assert found and found.group(1) == docker_engine.marker, printed
        # the container's host name is its id, not this machine's name
        assert re.fullmatch(r"[0-9a-f]{12}", found.group(2)) and \
            found.group(2) != socket.gethostname()
    assert printed[2].rstrip().endswith(" 42")
    assert docker_engine.docker("ps", "-q").stdout.strip() == ""  # StreamFlow stopped it


def test_mixed_run_with_container_limits(docker_engine: DockerEngine, tmp_path: Path) -> None:
    """A user's deployment file; one step in a container sized by --resources."""
    box = write_yaml(tmp_path / "box.yml", {"deployments": {"box": {"type": "docker", "config": {
        "image": docker_engine.image,
        # what GPU steps get for NCCL (memlock=-1 needs CAP_SYS_RESOURCE, absent here)
        "shmSize": 256 << 20, "ulimit": ["stack=67108864"]}}}})
    probe = ("import resource\n"
             "cgroups = ['/sys/fs/cgroup/memory/memory.limit_in_bytes', "
             "'/sys/fs/cgroup/memory.max']\n"
             "limit = next((open(p).read().strip() for p in cgroups if os.path.exists(p)), '?')\n"
             "shm = os.statvfs('/dev/shm')\n"
             "print('ran in', where(), 'memory', limit, 'shm', shm.f_blocks * shm.f_frsize,\n"
             "      'stack', resource.getrlimit(resource.RLIMIT_STACK)[0])")
    notebook = write_notebook(tmp_path / "mixed.ipynb", WHERE, "y = 1\nprint('ran in', where())",
                              probe, "print('ran in', where(), y)")
    printed = run_notebook(notebook, tmp_path / "wf", "--deployment", "local",
                           "--deployment-file", str(box), "--target", "cell_2=box",
                           "--resources", "cell_2=cores=1,memory=300M")
    assert printed[1].startswith("ran in host on") and printed[3].startswith("ran in host on")
    found = re.search(r"ran in (.+) on \S+ memory (\d+) shm (\d+) stack (\d+)", printed[2])
    assert found, printed
    assert found.group(1) == docker_engine.marker
    assert int(found.group(2)) == 300 << 20  # --resources memory=300M: the container's limit
    assert int(found.group(3)) == 256 << 20
    assert int(found.group(4)) == 67108864
