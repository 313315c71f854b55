"""A scattered loop's chunks on Docker: each chunk in a container of its own.

On one Docker deployment every step runs, with `docker exec`, in the same container, so the
chunks of a scattered loop share it, side by side on its cores. With `--chunks N`, the map
step of a loop bound to a docker deployment gets one container per chunk instead: deployments
`<name>-chunk1` ... `<name>-chunkN` (`<name>` with its needs: `docker-cpu2-chunk1`),
copies of the step's own container settings, each limited to the cores one chunk asks for
(`cpus`, one unless --resources says more). Its binding names them all; StreamFlow's scheduler
tries every target of a binding and places a chunk where the cores it needs are free, so no
container runs two chunks at once while another idles. StreamFlow starts the containers with
the run and removes them at its end, as it does the step's own. A loop whose items need GPUs
keeps one container, with the GPUs --resources gives it: `docker run --gpus N` would hand
every container the same first N GPUs.
"""

from __future__ import annotations

import copy
from typing import Any

from nb2cwl.ir.model import Step

#: the docker deployment (before its chunk number) a chunk's container copies
CHUNK_SUFFIX = "-chunk"


def chunk_targets(step: Step, target: dict[str, Any], deployments: dict[str, dict[str, Any]],
                  chunks: int) -> dict[str, Any] | list[dict[str, Any]]:
    """The binding target(s) of map step `step`: one container per chunk on a docker
    deployment when `chunks` (--chunks) says how many (added to `deployments`), else `target`
    unchanged. Without it the split counts the cores it sees when it runs: as many containers
    started up front would be one per core of the machine that compiled."""
    base = deployments.get(target["deployment"], {})
    count = chunks
    if step.role != "map" or base.get("type") != "docker" or count < 2 or step.resources.gpus:
        return target  # GPU chunks share the step's container and the GPUs it was given
    targets = []
    for number in range(1, count + 1):
        name = f"{target['deployment']}{CHUNK_SUFFIX}{number}"
        if name not in deployments:
            entry = copy.deepcopy(base)
            entry.setdefault("config", {}).setdefault("cpus", step.resources.cores or 1)
            deployments[name] = entry
        targets.append({**target, "deployment": name})
    return targets


def first_target(target: dict[str, Any] | list[dict[str, Any]]) -> dict[str, Any]:
    """The first of a binding's targets (they are copies of one deployment)."""
    return target[0] if isinstance(target, list) else target
