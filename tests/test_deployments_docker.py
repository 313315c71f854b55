"""Steps bound to Docker run in containers of a real Docker engine started on this machine.

The image is containers/Dockerfile.cpu built on a local Debian root file system (see
tests/engines/docker.py); its /etc/nb2cwl-image marker exists nowhere else, so a cell that reads
it proves it ran in the container. GPUs cannot be tested here: there is no GPU, nor the NVIDIA
container runtime that `gpus` needs.
"""

from __future__ import annotations

import ast
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


def test_a_scattered_loops_chunks_run_in_containers_of_their_own(
        docker_engine: DockerEngine, tmp_path: Path) -> None:
    """Issue 24, item 10: each chunk of a scattered loop is a container, the results Jupyter's."""
    notebook = write_notebook(
        tmp_path / "chunks.ipynb", WHERE + "\nimport time",
        "def square(i):\n"
        "    time.sleep(0.3)\n"
        "    return i * i, where()",
        "results = []\n"
        "for i in range(6):\n"
        "    results.append(square(i))",
        "print([value for value, _ in results])\n"
        "print(sorted({place for _, place in results}))",
    )
    printed = run_notebook(notebook, tmp_path / "wf", "--deployment", "docker",
                           "--image", docker_engine.image, "--chunks", "2")
    assert printed[3].splitlines()[0] == "[0, 1, 4, 9, 16, 25]"  # Jupyter's, in item order
    places = ast.literal_eval(printed[3].splitlines()[1])
    assert len(places) == 2, printed  # two containers, one per chunk
    assert all(re.fullmatch(f"{re.escape(docker_engine.marker)} on [0-9a-f]{{12}}", p)
               for p in places), places
    config = (tmp_path / "wf" / "streamflow.yml").read_text()
    assert "docker-chunk1" in config and "docker-chunk2" in config
    assert docker_engine.containers_left() == ""
