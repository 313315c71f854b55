"""The image a bundle's Docker deployments run their steps in: one built from the bundle.

A workflow compiled with `--deployment docker` and no `--image` names the profile's image,
`nb2cwl-step:cpu`, built from unpinned packages, or not at all on another machine. In a bundle
every such deployment names the bundle's own image instead: `environment/Dockerfile` built
from the lock, tagged `nb2cwl-bundle-<notebook>:<12 hex digits of the lock>`, so the tag
changes whenever a pinned version does. The README gives the one `docker build` that makes it.
An image the user chose (`--image`, a --deployment-file) is kept as it is, with a warning
that it does not come from the bundle's environment; a GPU image is kept too (the bundle's
Dockerfile has no CUDA).
"""

from __future__ import annotations

from pathlib import Path

from ruamel.yaml import YAML

from nb2cwl.backends.environment_lock import EnvironmentLock
from nb2cwl.backends.step_image import default_tag
from nb2cwl.ir.model import Workflow

#: the images the built-in docker profile names (streamflow-configs/docker.yml)
PROFILE_IMAGES = ("nb2cwl-step:cpu",)


def bundle_tag(workflow: Workflow, lock: EnvironmentLock) -> str:
    """nb2cwl-bundle-<notebook>:<12 hex digits of the lock's requirements>."""
    return default_tag(workflow, lock, kind="bundle")


def use_bundle_image(root: Path, tag: str) -> tuple[list[str], list[str]]:
    """Point the docker deployments of `root`/streamflow.yml that name the profile's image at
    `tag`. Returns the deployments changed, and a warning for each that keeps another image."""
    path = root / "streamflow.yml"
    yaml = YAML()
    config = yaml.load(path.read_text(encoding="utf-8"))
    changed: list[str] = []
    warnings: list[str] = []
    for name, entry in (config.get("deployments") or {}).items():
        if not isinstance(entry, dict) or entry.get("type") != "docker":
            continue
        settings = entry.get("config") or {}
        image = settings.get("image")
        if image in PROFILE_IMAGES:
            settings["image"] = tag
            changed.append(name)
        elif image:
            warnings.append(f"deployment {name} runs its steps in the image {image}, which the "
                            "bundle does not build; the rerun needs it where it runs")
    if changed:
        with path.open("w", encoding="utf-8") as out:
            yaml.dump(config, out)
    return changed, warnings
