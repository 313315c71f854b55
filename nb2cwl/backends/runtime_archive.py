"""The step runtime as a workflow holds it: one zip file that every step imports from.

StreamFlow registers each file of a step's inputs (a token, a checksum) and stages it, for
every step; a folder of thirty modules made that about 30 ms of the engine's time per step.
A zip is one file, and Python imports a package from it as it does from a folder (zipimport).
The archive is the same bytes for the same sources: the entries are sorted, stored
uncompressed and stamped with one fixed time.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

from nb2cwl.backends.naming import RUNTIME_PACKAGE, RUNTIME_SOURCE

_STAMP = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry holds


def write_runtime_archive(path: Path) -> None:
    """Write RUNTIME_SOURCE's Python files into the zip `path`, under RUNTIME_PACKAGE/."""
    partial = path.with_name(path.name + ".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_STORED) as archive:
        for source in sorted(RUNTIME_SOURCE.glob("*.py")):
            entry = zipfile.ZipInfo(f"{RUNTIME_PACKAGE}/{source.name}", date_time=_STAMP)
            entry.external_attr = 0o644 << 16
            archive.writestr(entry, source.read_bytes())
    os.replace(partial, path)
