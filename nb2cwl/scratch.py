"""A run's private scratch folders, removed when the run ends, and those of killed runs.

Each `nb2cwl run` (and `nb2cwl check`) makes its scratch folders in the system's temporary
folder, named `nb2cwl-<kind>-<pid>-<random>`: the step server's socket (`steps`), the events
it shows progress from (`events`), and StreamFlow's working folder for the local steps
(`work`: every job's folder, its inputs and outputs, which StreamFlow itself never removes,
so that `$TMPDIR/streamflow` grew by a folder per step and run, without bound). They are
removed when the run ends, however it ends; a run killed with SIGKILL cannot, so the next run
removes the scratch folders whose process is gone.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile

#: Set for StreamFlow (nb2cwl.engine): the folder local deployments work in, unless the
#: StreamFlow file names one (`workdir`).
WORKDIR_ENV = "NB2CWL_WORKDIR"
_NAME = re.compile(r"^nb2cwl-(?:work|steps|events)-(\d+)-")


def scratch_folder(kind: str) -> str:
    """A new private folder of this process for `kind` (work, steps or events)."""
    return tempfile.mkdtemp(prefix=f"nb2cwl-{kind}-{os.getpid()}-")


def remove_stale() -> list[str]:
    """Remove the scratch folders of processes that are gone; their paths."""
    root = tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    for name in names:
        found = _NAME.match(name)
        if found is None or _alive(int(found.group(1))):
            continue
        path = os.path.join(root, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
