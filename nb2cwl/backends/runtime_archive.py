"""The step runtime as a workflow holds it: one zip file that every step imports from.

StreamFlow registers each file of a step's inputs (a token, a checksum) and stages it, for
every step; a folder of thirty modules made that about 30 ms of the engine's time per step.
A zip is one file, and Python imports a package from it as it does from a folder (zipimport).

Python never writes the compiled code of modules it imports from a zip, so the zip holds it:
beside each `NAME.py`, a `NAME.pyc` compiled by the interpreter that compiled the workflow
(unchecked-hash, PEP 552: valid for as long as the zip is unchanged). A step started by
another Python version finds another magic number there and compiles the source instead. A
step that does not start from the warm step server (a container, a Slurm job, a plain
`streamflow run`) starts about 60 ms sooner with them. Compiling the thirty modules takes
about 50 ms, so an output folder's zip is written again as it was when its sources are still
the runtime's.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import marshal
import os
import tempfile
import zipfile
from pathlib import Path

from nb2cwl.backends.naming import RUNTIME_PACKAGE, RUNTIME_SOURCE

_STAMP = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry holds: the same every time
_UNCHECKED_HASH = (0b01).to_bytes(4, "little")  # PEP 552's flags: hash-based, not checked


def write_runtime_archive(path: Path, previous: bytes | None = None) -> None:
    """Write RUNTIME_SOURCE's Python files, and their code compiled by this interpreter, into
    the zip `path` (under RUNTIME_PACKAGE/); `previous`, the zip an earlier compilation wrote
    there, is written again instead when it holds the same."""
    sources = {source.name: source.read_bytes()
               for source in sorted(RUNTIME_SOURCE.glob("*.py"))}
    if previous is None or not _holds(previous, sources):
        data = io.BytesIO()
        with zipfile.ZipFile(data, "w", zipfile.ZIP_STORED) as archive:
            for name, source in sources.items():
                code = compile(source, f"{RUNTIME_PACKAGE}/{name}", "exec", dont_inherit=True)
                _add(archive, name, source)
                _add(archive, name + "c", importlib.util.MAGIC_NUMBER + _UNCHECKED_HASH
                     + importlib.util.source_hash(source) + marshal.dumps(code))
        previous = data.getvalue()
    handle, partial = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(previous)
        os.chmod(partial, 0o644)
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise


def _add(archive: zipfile.ZipFile, name: str, data: bytes) -> None:
    entry = zipfile.ZipInfo(f"{RUNTIME_PACKAGE}/{name}", date_time=_STAMP)
    entry.create_system = 3  # Unix, wherever it was written
    entry.external_attr = 0o644 << 16
    archive.writestr(entry, data)


def _holds(data: bytes, sources: dict[str, bytes]) -> bool:
    """The zip `data` has exactly these sources, and code this interpreter compiled."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            expected = {f"{RUNTIME_PACKAGE}/{name}{suffix}" for name in sources
                        for suffix in ("", "c")}
            return names == expected and all(
                archive.read(f"{RUNTIME_PACKAGE}/{name}") == source
                and archive.read(f"{RUNTIME_PACKAGE}/{name}c")[:4] == importlib.util.MAGIC_NUMBER
                for name, source in sources.items())
    except (OSError, zipfile.BadZipFile, KeyError):
        return False
