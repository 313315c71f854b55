"""The runtime's own Python files: in a folder, or in the zip a workflow holds it as.

A compiled workflow gives its steps the runtime as `nb2cwl_runtime.zip` (entries
`nb2cwl_runtime/NAME.py`); the step server runs a folder copy of it. Both are read alike here,
for the step cache's key and the server's check that a step's runtime is its own.
"""

from __future__ import annotations

import os


def own_location() -> str:
    """The folder, or the zip file, this package was imported from."""
    folder = os.path.dirname(os.path.abspath(__file__))
    return folder if os.path.isdir(folder) else os.path.dirname(folder)


def runtime_sources(location: str) -> dict[str, bytes] | None:
    """Each Python file of the runtime at `location` (a folder, or a zip), by its file name;
    None when it cannot be read."""
    try:
        if os.path.isdir(location):
            found = {}
            for name in sorted(os.listdir(location)):
                if name.endswith(".py"):
                    with open(os.path.join(location, name), "rb") as handle:
                        found[name] = handle.read()
            return found
    except OSError:
        return None
    import zipfile

    try:
        with zipfile.ZipFile(location) as archive:
            return {entry.split("/", 1)[1]: archive.read(entry)
                    for entry in sorted(archive.namelist())
                    if entry.count("/") == 1 and entry.endswith(".py")}
    except (OSError, zipfile.BadZipFile):
        return None
