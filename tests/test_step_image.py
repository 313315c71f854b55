"""`nb2cwl image` (issue 26, item 8): the step image pins what this environment has, and a pip
user builds it with one command. Through the CLI, as a user meets it."""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from deployment_cases import write_notebook
from engines.docker import DockerEngine


def _image(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nb2cwl", "image", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300, env=env)


def test_the_recipe_pins_this_environments_versions(tmp_path: Path) -> None:
    write_notebook(tmp_path / "study.ipynb", "import numpy as np\nimport pandas as pd",
                   "frame = pd.DataFrame({'x': np.arange(3)})\nprint(frame.x.sum())")
    done = _image("study.ipynb", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    pins = dict(line.split("==") for line in
                (tmp_path / "study-image" / "requirements.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    for name in ("numpy", "pandas", "cloudpickle", "ipython"):
        assert pins[name] == metadata.version(name), name
    assert "streamflow" not in pins  # StreamFlow runs outside the container
    recipe = (tmp_path / "study-image" / "Dockerfile").read_text()
    assert f"ARG BASE=python:{platform.python_version()}-slim" in recipe
    assert "pip install --no-cache-dir -r /tmp/nb2cwl-requirements.txt" in recipe
    tag = next(w for w in done.stdout.split() if w.startswith("nb2cwl-step-study:"))
    assert f"build it: docker build -t {tag} study-image" in done.stdout
    assert f"nb2cwl run study.ipynb --deployment docker --image {tag}" in done.stdout
    # the same pins, the same tag; nothing of the user's is overwritten without --force
    (tmp_path / "study-image" / "notes.txt").write_text("mine")
    refused = _image("study.ipynb", cwd=tmp_path)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
    assert "study-image holds other files (notes.txt)" in refused.stderr
    assert "--force" in refused.stderr and "Traceback" not in refused.stderr
    again = _image("study.ipynb", "--force", cwd=tmp_path)
    assert again.returncode == 0 and tag in again.stdout
    assert (tmp_path / "study-image" / "notes.txt").read_text() == "mine"


@pytest.mark.docker
def test_a_failed_build_shows_dockers_cause(docker_engine: DockerEngine, tmp_path: Path) -> None:
    """The test engine's image has python3 and cloudpickle but neither pip nor IPython: the
    build runs for real and fails in pip, and the one line says so."""
    write_notebook(tmp_path / "plain.ipynb", "import json\nprint(json.dumps([1]))")
    done = _image("plain.ipynb", "--build", "--base", docker_engine.image, "-t", "nb2cwl-t:1",
                  cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("nb2cwl: error:")]
    assert len(errors) == 1 and "docker build of plain-image failed" in errors[0], done.stderr
    assert errors[0].endswith("No module named pip (a RUN step of the Dockerfile exited with "
                              "status 1)"), errors[0]
    assert "Traceback" not in done.stderr
    # the failed step's container is removed (the stop tests find the engine empty)
    assert docker_engine.containers_left() == ""


def _base_with_the_pins(engine: DockerEngine, pins: Path, folder: Path) -> str:
    """An image on the test engine's (Debian's python3, no pip) that holds every pinned
    distribution, copied from this environment with its metadata: what a base image that
    brings the notebook's libraries is (no index is reachable from the test engine)."""
    site = folder / "site"
    for line in pins.read_text().splitlines():
        if "==" not in line or line.startswith("#"):
            continue
        dist = metadata.distribution(line.split("==")[0])
        root = Path(dist.locate_file(""))
        for file in dist.files or ():
            source = Path(dist.locate_file(file))
            if ".." in file.parts or "__pycache__" in file.parts or not source.is_file():
                continue  # scripts outside site-packages, bytecode
            target = site / source.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
    (folder / "Dockerfile").write_text(f"FROM {engine.image}\n"
                                       "COPY site/ /usr/lib/python3/dist-packages/\n")
    tag = "nb2cwl-test-pinned:1"
    engine.docker("build", "--network=none", "-t", tag, str(folder), timeout=300)
    return tag


@pytest.mark.docker
def test_a_built_image_runs_the_notebooks_steps(docker_engine: DockerEngine,
                                                tmp_path: Path) -> None:
    """`nb2cwl image --build` on a base that already has every pin: pip is skipped, the
    build succeeds, and the notebook's steps run in the image as in Jupyter (IPython's
    formatting included: `Out` values as the kernel shows them)."""
    write_notebook(tmp_path / "plain.ipynb", "import json\nrows = [1, 2, 3]",
                   "print(json.dumps(rows))", "{'total': sum(rows)}")
    assert _image("plain.ipynb", cwd=tmp_path).returncode == 0
    base = _base_with_the_pins(docker_engine, tmp_path / "plain-image" / "requirements.txt",
                               tmp_path / "base")
    done = _image("plain.ipynb", "--build", "--base", base, "-t", "nb2cwl-plain:ok", "--force",
                  cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "built nb2cwl-plain:ok" in done.stdout, done.stdout
    ran = subprocess.run([sys.executable, "-m", "nb2cwl", "run", "plain.ipynb", "--deployment",
                          "docker", "--image", "nb2cwl-plain:ok", "-o", "wf", "--quiet",
                          "--granularity", "cell"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    executed = next((tmp_path / "wf" / "runs" / "1").glob("*.executed.ipynb"))
    cells = [c for c in json.loads(executed.read_text())["cells"] if c["cell_type"] == "code"]
    assert "".join(cells[1]["outputs"][0]["text"]) == "[1, 2, 3]\n"
    assert cells[2]["outputs"][0]["data"]["text/plain"] == "{'total': 6}"
    assert docker_engine.containers_left() == ""


@pytest.mark.parametrize(("stdout", "stderr", "cause"), [
    ("", "ERROR: Cannot connect to the Docker daemon at unix:///nowhere.sock. Is the docker "
     "daemon running?\n", "ERROR: Cannot connect to the Docker daemon at unix:///nowhere.sock. "
     "Is the docker daemon running?"),
    ("", "#7 [3/4] RUN pip install x\n#7 0.4 Collecting x\n#7 1.2 /usr/bin/python3: No module "
     "named pip\n#7 ERROR: process \"/bin/sh -c pip install x\" did not complete "
     "successfully: exit code: 1\nERROR: failed to solve: process \"/bin/sh -c pip install x\" "
     "did not complete successfully: exit code: 1\n",
     "/usr/bin/python3: No module named pip (a RUN step of the Dockerfile exited with status 1)"),
    ("Step 4/7 : RUN pip\n ---> Running in 5\nNo module named pip\n[notice] A new release\n",
     "The command '/bin/sh -c pip' returned a non-zero code: 1\n",
     "No module named pip (a RUN step of the Dockerfile exited with status 1)"),
])
def test_buildkits_and_the_clients_causes_are_kept(stdout: str, stderr: str,
                                                   cause: str) -> None:
    from nb2cwl.backends.step_image import build_failure

    assert build_failure(stdout, stderr) == cause


def _export(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nb2cwl", "export", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_a_docker_bundle_runs_its_steps_in_its_own_image(tmp_path: Path) -> None:
    """Issue 26, item 8: a bundle compiled for Docker names the image of its own lock (not
    the profile's unpinned nb2cwl-step:cpu), and says how to build it; an image the user
    chose is kept, with a warning."""
    import zipfile

    from ruamel.yaml import YAML

    write_notebook(tmp_path / "study.ipynb", "import numpy as np",
                   "print(np.arange(4).sum())")
    done = _export("study.ipynb", "-o", "study.zip", "--deployment", "docker", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(tmp_path / "study.zip") as bundle:
        config = YAML(typ="safe").load(bundle.read("streamflow.yml"))
        readme = bundle.read("README.md").decode()
        recipe = bundle.read("environment/Dockerfile").decode()
        pins = bundle.read("environment/requirements.txt").decode()
    images = {name: entry["config"]["image"] for name, entry in config["deployments"].items()
              if entry["type"] == "docker"}
    assert images and len(set(images.values())) == 1, images
    tag = next(iter(images.values()))
    assert tag.startswith("nb2cwl-bundle-study:") and "nb2cwl-step" not in tag
    assert tag.endswith(":" + hashlib.sha256(pins.encode()).hexdigest()[:12])
    build = f"docker build -t {tag} -f environment/Dockerfile ."
    assert build in readme and build in recipe
    assert f"numpy=={metadata.version('numpy')}" in pins
    # the user's own image stays, and the export says the bundle does not build it
    chosen = _export("study.ipynb", "-o", "chosen.zip", "--deployment", "docker", "--image",
                     "lab/python:3.11", cwd=tmp_path)
    assert chosen.returncode == 0, chosen.stderr
    with zipfile.ZipFile(tmp_path / "chosen.zip") as bundle:
        config = YAML(typ="safe").load(bundle.read("streamflow.yml"))
        readme = bundle.read("README.md").decode()
    assert {e["config"]["image"] for e in config["deployments"].values()
            if e["type"] == "docker"} == {"lab/python:3.11"}
    assert "runs its steps in the image lab/python:3.11, which the bundle does not build" in \
        chosen.stderr
    assert "## The steps' image" not in readme
