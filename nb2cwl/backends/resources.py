"""What a step needs (cores, memory, GPUs, nodes): parsed from --resources, written into CWL.

CWL carries the needs portably: cores and memory as a ResourceRequirement, GPUs as the
`cwltool:CUDARequirement` hint. StreamFlow 0.2.0rc3 schedules by cores and memory but ignores
GPUs, so `deployments.py` also puts every need into the connector's own configuration.
"""

from __future__ import annotations

import re
from typing import Any

from nb2cwl.errors import BackendError
from nb2cwl.ir.model import Resources

CWLTOOL_NAMESPACE = "http://commonwl.org/cwltool#"
KEYS = ("cores", "memory", "gpus", "nodes")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b?)?\s*$", re.IGNORECASE)
_MIB = {"k": 1 / 1024, "": 1, "m": 1, "g": 1024, "t": 1024 * 1024}
# containers/Dockerfile.gpu: TensorFlow 2.21 is built for CUDA 12 (cu12 wheels); a hint only
CUDA_VERSION_MIN = "12.0"
CUDA_COMPUTE_CAPABILITY = "6.0"


def parse_resources(text: str, option: str = "--resources") -> Resources:
    """`cores=4,memory=8G,gpus=1,nodes=2` (any subset) as Resources; BackendError if malformed."""
    values: dict[str, int | None] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        key = key.strip().lower()
        if not sep or key not in KEYS:
            raise BackendError(f"{option}: {item!r} is not one of "
                               f"{', '.join(k + '=' for k in KEYS)} (e.g. "
                               "cores=4,memory=8G,gpus=1,nodes=2)")
        if key == "memory":
            values["memory_mb"] = parse_memory(value, option)
            continue
        try:
            number = int(value)
        except ValueError:
            raise BackendError(f"{option}: {key} must be a whole number, not {value!r}") from None
        if number < (0 if key == "gpus" else 1):
            raise BackendError(f"{option}: {key} must be {'0' if key == 'gpus' else '1'} or more")
        values[key] = number
    if not values:
        raise BackendError(f"{option}: no resources given (e.g. cores=4,memory=8G,gpus=1)")
    return Resources(**values)  # type: ignore[arg-type]


def parse_memory(text: str, option: str = "--resources") -> int:
    """A size such as 512M, 8G, 8GiB or 2048 (MiB) in MiB."""
    match = _SIZE.match(text)
    if not match:
        raise BackendError(f"{option}: memory must be a size such as 512M, 8G or 2048 (MiB), "
                           f"not {text!r}")
    mib = float(match.group(1)) * _MIB[match.group(2).lower()]
    if mib < 1:
        raise BackendError(f"{option}: memory must be at least 1M, not {text!r}")
    return int(mib + 0.999)


def describe(resources: Resources) -> str:
    """A short name for the needs, usable in deployment and service names (cpu4-mem8192m-gpu1)."""
    parts = []
    if resources.cores is not None:
        parts.append(f"cpu{resources.cores}")
    if resources.memory_mb is not None:
        parts.append(f"mem{resources.memory_mb}m")
    if resources.gpus:
        parts.append(f"gpu{resources.gpus}")
    if resources.nodes > 1:
        parts.append(f"node{resources.nodes}")
    return "-".join(parts) or "default"


def resource_requirement(resources: Resources) -> Any:
    """Cores and memory for CWL; StreamFlow waits for a location that has them (a
    cwl_utils ResourceRequirement: imported here, so that planning deployments needs none)."""
    from cwl_utils.parser import cwl_v1_2 as cwl

    return cwl.ResourceRequirement(coresMin=resources.cores or 1, ramMin=resources.memory_mb)


def gpu_hints(resources: Resources) -> list[dict[str, Any]] | None:
    """The portable GPU request (cwltool's CUDARequirement), or None for CPU steps."""
    if not resources.gpus:
        return None
    return [{"class": "cwltool:CUDARequirement", "cudaVersionMin": CUDA_VERSION_MIN,
             "cudaComputeCapability": CUDA_COMPUTE_CAPABILITY,
             "cudaDeviceCountMin": resources.gpus}]


def with_namespaces(document: dict[str, Any]) -> dict[str, Any]:
    """Declare the cwltool namespace in a document whose hints use it."""
    if any(str(h.get("class", "")).startswith("cwltool:") for h in document.get("hints") or []):
        document["$namespaces"] = {"cwltool": CWLTOOL_NAMESPACE}
    return document
