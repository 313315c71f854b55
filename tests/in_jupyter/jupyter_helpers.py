"""Helpers of the Jupyter integration's tests."""

from __future__ import annotations

import os
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
    them. test_jupyter_install.py checks the real install."""
    data = tmp_path / "jupyter-data"
    (data / "kernels" / "nb2cwl").mkdir(parents=True)
    (data / "kernels" / "nb2cwl" / "kernel.json").write_text(
        (INTEGRATIONS / "ipython" / "kernelspec" / "kernel.json").read_text())
    lab = data / "labextensions" / "nb2cwl-jupyterlab"
    lab.mkdir(parents=True)
    built = INTEGRATIONS / "jupyterlab" / "labextension"
    for item in ("package.json", "static"):
        (lab / item).symlink_to(built / item)
    (lab / "install.json").symlink_to(INTEGRATIONS / "jupyterlab" / "install.json")
    config = tmp_path / "jupyter-config" / "jupyter_server_config.d"
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
