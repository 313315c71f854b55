"""A function pickled by value keeps the file name of the cell that defined it, and its source.

cloudpickle saves a function's code under the file name "<dynamic-code>". In the kernel a
cell's code has the file name IPython gives the cell (`/tmp/ipykernel_4242/1037361036.py`),
and a warning raised in a function shows it, with the line's source, which IPython keeps in
linecache. A function handed to another step (a lambda in a value, the function a scattered
loop calls per item) would show "<dynamic-code>:5" and no source there. The pickler saves each
code object with its file name and that file's lines (when linecache has them); loading puts
both back.
"""

from __future__ import annotations

import linecache
import os
import re
import tempfile
import types
from typing import Any

_DYNAMIC = "<dynamic-code>"
# ipykernel names a cell's code in a folder of the process (/tmp/ipykernel_4242/): a value
# saves the name without it (a rerun that makes an equal value makes an equal file, so later
# steps stay cached) and gets the loading process's folder back
_KERNEL_FOLDER = re.compile(r"^(?:.*/)?ipykernel_\d+/(?=[^/]+$)")
_IN_KERNEL_FOLDER = "<ipykernel folder>/"


def reduce_code(code: types.CodeType, inner: dict[int, types.CodeType]) -> tuple | None:
    """The reduction of `code` that keeps its file name, or None: pickle it as cloudpickle
    does. It holds a copy of `code`, pickled as cloudpickle does, which
    `rebuild_code` renames (pickle would take `code` itself there for the result, being
    met again). `inner`: the copies by id, alive until the dump ends."""
    if id(code) in inner or code.co_filename in ("", _DYNAMIC):
        return None
    copy = code.replace()
    inner[id(copy)] = copy
    lines = linecache.cache.get(code.co_filename)
    source = tuple(lines[2]) if lines and len(lines) >= 3 else ()  # not a lazy entry
    filename = _KERNEL_FOLDER.sub(_IN_KERNEL_FOLDER, code.co_filename)
    return rebuild_code, (copy, filename, source)


def rebuild_code(code: types.CodeType, filename: str, source: tuple[str, ...]) -> Any:
    """`code` under `filename` again, its lines registered where warnings look for them."""
    if filename.startswith(_IN_KERNEL_FOLDER):
        filename = os.path.join(_kernel_folder(), filename[len(_IN_KERNEL_FOLDER):])
    if source and filename not in linecache.cache:
        linecache.cache[filename] = (sum(map(len, source)), None, list(source), filename)
    return _renamed(code, filename)


def _kernel_folder() -> str:
    """The folder ipykernel's compiler names this process's cells in."""
    try:
        from ipykernel.compiler import get_tmp_directory

        return get_tmp_directory()
    except ImportError:
        return os.path.join(tempfile.gettempdir(), f"ipykernel_{os.getpid()}")


def _renamed(code: types.CodeType, filename: str) -> types.CodeType:
    consts = tuple(_renamed(c, filename) if isinstance(c, types.CodeType)
                   and c.co_filename == _DYNAMIC else c for c in code.co_consts)
    if code.co_filename != _DYNAMIC and all(a is b for a, b in zip(consts, code.co_consts,
                                                                     strict=True)):
        return code
    return code.replace(co_filename=filename, co_consts=consts)
