"""Optional hints a notebook may import: harmless no-ops when the notebook runs in Jupyter.

    from nb2cwl import parallel_task, gpu_task

    @parallel_task
    def score(item): ...

Calls of a `@parallel_task` function in a loop or comprehension are always run as a scatter
(when the loop is safe to split), even where the per-item work looks cheap. `@gpu_task` does the
same and marks the step as needing a GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable[..., object])


def parallel_task(function: F) -> F:
    """Mark `function` as worth running once per item in parallel. Returns it unchanged."""
    return function


def gpu_task(function: F) -> F:
    """Mark `function` as GPU work worth running per item in parallel. Returns it unchanged."""
    return function
