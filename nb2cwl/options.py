"""Options that change how a notebook is compiled."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CompileOptions:
    """What the user asked for on the command line (or through the API)."""

    granularity: str = "auto"  # "auto": a boundary only where it pays; "cell": one per cell
    profile: str | None = None  # a profile of a real run (nb2cwl profile) for the cost model
    python: str = "python3"  # interpreter the steps run with (found on PATH at run time)
    force: bool = False  # write into an existing directory holding other files
    scatter: bool = True  # run safe loops and comprehensions as scatter/gather
    chunks: int = 0  # items per scatter are cut into this many chunks (0: one per core)
    scale_learning_rate: bool = False  # training steps: learning rate x replicas (Keras fit)
    retries: int = 0  # times StreamFlow retries a step whose process crashed
    retry_delay: int = 0  # seconds between those retries
    # where steps run (see nb2cwl/backends/deployments.py and streamflow-configs/)
    deployment: str | None = None  # default deployment: a profile or a --deployment-file name
    targets: tuple[tuple[str, str], ...] = ()  # (step pattern, deployment); first match wins
    resources: tuple[tuple[str, str], ...] = ()  # (step pattern, "cores=4,memory=8G,...")
    image: str | None = None  # container image of the docker and helm deployments
    chart: str | None = None  # Helm chart of the helm deployments
    deployment_file: str | None = None  # YAML with the user's StreamFlow deployments
    swept: tuple[str, ...] = ()  # parameters a sweep runs with several values (nb2cwl run)
    # the notebook's content from this file instead of the notebook's own (unsaved edits: the
    # notebook's path still locates the files beside it)
    content: str | None = None
    only_cells: tuple[str, ...] = ()  # run just these cells (ids or indices) and what they need
    keep_values: bool = False  # each step also saves the variables it defines (for pulling)
    # an output folder whose last run's measured seconds per cell (cells unchanged since)
    # replace the estimates where boundaries and scatters are chosen; not with `profile`
    last_run_in: str | None = None
