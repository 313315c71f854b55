"""Helpers of the Jupyter integration's tests."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat


def write_notebook(folder: Path, name: str, sources: list[str],
                   tags: dict[int, list[str]] | None = None) -> Path:
    """A python3 notebook of code cells with ids cell-0, cell-1, ... (and tags per index)."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python",
                                       "display_name": "Python 3"}
    notebook.cells = [nbformat.v4.new_code_cell(source, id=f"cell-{n}",
                                                metadata={"tags": (tags or {}).get(n, [])})
                      for n, source in enumerate(sources)]
    path = folder / name
    nbformat.write(notebook, str(path))
    return path


ROOT = Path(__file__).resolve().parent.parent.parent
INTEGRATIONS = ROOT / "nb2cwl" / "integrations"


def jupyter_paths_in(tmp_path: Path) -> dict[str, str]:
    """JUPYTER_PATH and JUPYTER_CONFIG_PATH holding what `pip install nb2cwl` puts in the
    environment (the kernelspec, the prebuilt lab extension, the server extension's config),
    taken from the source tree: an editable install (the test environment) gets none of
    them. test_jupyter_install.py checks the real install. Made again for a server started
    again in the same folder (a restart), it is left as it is."""
    data = tmp_path / "jupyter-data"
    config = tmp_path / "jupyter-config" / "jupyter_server_config.d"
    if (config / "nb2cwl.json").exists():
        return {"JUPYTER_PATH": str(data), "JUPYTER_CONFIG_PATH": str(config.parent)}
    (data / "kernels" / "nb2cwl").mkdir(parents=True)
    (data / "kernels" / "nb2cwl" / "kernel.json").write_text(
        (INTEGRATIONS / "ipython" / "kernelspec" / "kernel.json").read_text())
    lab = data / "labextensions" / "nb2cwl-jupyterlab"
    lab.mkdir(parents=True)
    built = INTEGRATIONS / "jupyterlab" / "labextension"
    for item in ("package.json", "static"):
        (lab / item).symlink_to(built / item)
    (lab / "install.json").symlink_to(INTEGRATIONS / "jupyterlab" / "install.json")
    config.mkdir(parents=True)
    (config / "nb2cwl.json").write_text(
        (INTEGRATIONS / "server" / "jupyter-config" / "nb2cwl.json").read_text())
    return {"JUPYTER_PATH": str(data), "JUPYTER_CONFIG_PATH": str(config.parent)}


def processes_with(text: str) -> list[int]:
    """Processes whose environment holds `text` (a run's steps carry its events folder)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if text.encode() in handle.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def start_lab(home: Path, root: Path, token: str,
              settings: Path | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """A real `jupyter lab` on 127.0.0.1 serving `root`, with nb2cwl's extensions found as an
    install puts them, its runs in home/runs and its log in home/lab.log; the process (its own
    session: stop_lab stops everything it started) and its base URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(home / "runtime"),
               NB2CWL_RUNS_DIR=str(home / "runs"),
               # this server's own workspaces: none shared with another test's server
               JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               **jupyter_paths_in(home))  # the extensions, as an install puts them
    if settings is not None:
        env["JUPYTERLAB_SETTINGS_DIR"] = str(settings)
    with open(home / "lab.log", "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
             "--ip=127.0.0.1", f"--port={port}", f"--IdentityProvider.token={token}",
             "--LabApp.extension_manager=readonly", "--LabApp.expose_app_in_browser=True",
             "--JupyterNotebookApp.expose_app_in_browser=True", f"--ServerApp.root_dir={root}"],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            request = urllib.request.Request(f"{base}/api/status",
                                             headers={"Authorization": f"token {token}"})
            urllib.request.urlopen(request, timeout=2).read()
            return process, base
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                stop_lab(process)
                raise RuntimeError((home / "lab.log").read_text()[-3000:]) from None
            time.sleep(0.3)


def stop_lab(process: subprocess.Popen[bytes]) -> None:
    """Stop the server and what it started (its kernels, runs): its process group."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
