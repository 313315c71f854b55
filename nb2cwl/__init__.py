"""nb2cwl: compile ordinary Jupyter notebooks into CWL v1.2 workflows that StreamFlow runs.

`from nb2cwl import parallel_task` stays cheap: the compiler is imported only when used.
"""

from __future__ import annotations

from typing import Any

from nb2cwl.hints import gpu_task, parallel_task

__version__ = "0.1.0"
__all__ = ["CompileOptions", "Nb2CwlError", "__version__", "compile_notebook",
           "compile_to_directory", "gpu_task", "parallel_task"]

_LAZY = {
    "compile_notebook": "nb2cwl.api",
    "compile_to_directory": "nb2cwl.api",
    "CompileOptions": "nb2cwl.options",
    "Nb2CwlError": "nb2cwl.errors",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'nb2cwl' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext nb2cwl`: the %nb2cwl magics (nb2cwl.integrations.ipython)."""
    from nb2cwl.integrations.ipython import load_ipython_extension as load

    load(ipython)
