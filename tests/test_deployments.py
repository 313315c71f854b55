"""Where steps run: profiles, bindings, resources and their validation (no engine needed).

The tests that run steps on real engines are in test_deployments_slurm.py and
test_deployments_docker.py; the Helm chart is checked in test_deployments_helm.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from deployment_cases import (
    BIN,
    PROFILES,
    broken_keys,
    compile_cli,
    load_yaml,
    streamflow_validate,
    targets,
    write_notebook,
    write_yaml,
)

from nb2cwl.api import compile_notebook
from nb2cwl.backends.resources import parse_memory, parse_resources
from nb2cwl.errors import BackendError
from nb2cwl.ir.model import Resources
from nb2cwl.options import CompileOptions

CHART = PROFILES.parent / "containers" / "helm" / "nb2cwl-worker"


#: Every step hashes strings as the others do (backends/cwl.py)
HASH_SEED = {"class": "EnvVarRequirement",
             "envDef": [{"envName": "PYTHONHASHSEED", "envValue": "0"}]}


def _gpu_notebook(tmp_path: Path) -> Path:
    """cell_0 -> a loop calling a @gpu_task function (split/map/gather) -> cell_3."""
    return write_notebook(
        tmp_path / "train.ipynb",
        "from nb2cwl import gpu_task\nxs = list(range(6))",
        "@gpu_task\ndef fit(x):\n    return x * 2",
        "models = [fit(x) for x in xs]",
        "print(sum(models))",
    )


def _compile(notebook: Path, out: Path, *options: str) -> dict:
    status, err = compile_cli(notebook, out, *options)
    assert status == 0, err
    return load_yaml(out / "streamflow.yml")


def test_without_options_every_step_is_local(tmp_path: Path) -> None:
    config = _compile(write_notebook(tmp_path / "nb.ipynb", "x = 1", "print(x)"),
                      tmp_path / "wf", "--granularity", "cell")
    assert targets(config) == {"/": {"deployment": "local"}}
    assert config["deployments"] == {"local": {"type": "local", "config": {}}}
    tool = load_yaml(tmp_path / "wf" / "tools" / "cell_0.cwl")
    assert tool["requirements"] == [{"class": "ResourceRequirement", "coresMin": 1}, HASH_SEED]
    assert "hints" not in tool and "$namespaces" not in tool


@pytest.mark.parametrize("kind", ["local", "docker", "slurm", "helm"])
def test_every_profile_gives_a_valid_config(kind: str, tmp_path: Path) -> None:
    out = tmp_path / "wf"
    extra = [] if kind == "local" else ["--resources", "cell_3=cores=1,memory=512M"]
    config = _compile(_gpu_notebook(tmp_path), out, "--deployment", kind, *extra)
    assert targets(config)["/"]["deployment"] == kind
    assert not broken_keys(config)
    assert all(d["type"] != "helm3" for d in config["deployments"].values())
    result = streamflow_validate(out / "streamflow.yml")
    assert result.returncode == 0, (result.stdout + result.stderr)[-2000:]


def test_gpu_and_resource_needs_reach_cwl(tmp_path: Path) -> None:
    out = tmp_path / "wf"
    _compile(_gpu_notebook(tmp_path), out, "--resources", "cell_3=cores=2,memory=1.5G")
    mapper = load_yaml(out / "tools" / "cell_2_map.cwl")
    assert mapper["hints"][0]["class"] == "cwltool:CUDARequirement"
    assert mapper["hints"][0]["cudaDeviceCountMin"] == 1
    assert mapper["$namespaces"] == {"cwltool": "http://commonwl.org/cwltool#"}
    split = load_yaml(out / "tools" / "cell_2_split.cwl")
    assert "hints" not in split  # only the per-item part runs the @gpu_task function
    last = load_yaml(out / "tools" / "cell_3.cwl")
    assert last["requirements"] == [{"class": "ResourceRequirement", "coresMin": 2,
                                     "ramMin": 1536}, HASH_SEED]
    # cwltool checks the CUDARequirement's fields only with its extensions enabled
    result = subprocess.run([str(BIN / "cwltool"), "--enable-ext", "--validate",
                             str(out / "workflow.cwl")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]


def test_slurm_services_carry_the_needs(tmp_path: Path) -> None:
    config = _compile(_gpu_notebook(tmp_path), tmp_path / "wf", "--deployment", "slurm",
                      "--resources", "cell_3=cores=8,memory=32G,gpus=2,nodes=2")
    bound = targets(config)
    assert bound["/"] == {"deployment": "slurm", "service": "default"}
    assert bound["/cell_2_map"] == {"deployment": "slurm", "service": "default-gpu1"}
    assert "/cell_2_split" not in bound  # no needs: the default service
    services = config["deployments"]["slurm"]["config"]["services"]
    assert services["default-gpu1"] == {"jobName": "nb2cwl", "gres": "gpu:1"}
    name = bound["/cell_3"]["service"]
    assert services[name] == {"jobName": "nb2cwl", "cpusPerTask": 8, "mem": "32768M",
                              "gres": "gpu:2", "nodes": "2", "ntasksPerNode": 1}


def test_docker_gpu_containers_get_nccl_settings(tmp_path: Path) -> None:
    config = _compile(_gpu_notebook(tmp_path), tmp_path / "wf", "--deployment", "docker",
                      "--image", "my/tf:2.21", "--resources", "cell_3=cores=2,memory=1G")
    bound = targets(config)
    deployments = config["deployments"]
    gpu = deployments[bound["/cell_2_map"]["deployment"]]["config"]
    assert gpu == {"image": "my/tf:2.21", "gpus": "1", "shmSize": 2 << 30,
                   "ulimit": ["memlock=-1", "stack=67108864"]}
    limited = deployments[bound["/cell_3"]["deployment"]]["config"]
    assert limited == {"image": "my/tf:2.21", "cpus": 2, "memory": 1 << 30}
    assert deployments["docker"]["config"] == {"image": "my/tf:2.21"}


def test_a_docker_loop_gets_a_container_per_chunk(tmp_path: Path) -> None:
    """Issue 24, item 10: the map step's binding names one container per chunk, each limited
    to the cores a chunk asks for; StreamFlow accepts the binding's list of targets."""
    notebook = write_notebook(tmp_path / "loop.ipynb", "import time\nxs = list(range(6))",
                              "def slow(x):\n    time.sleep(1)\n    return x * 2",
                              "ys = [slow(x) for x in xs]", "print(sum(ys))")
    out = tmp_path / "wf"
    config = _compile(notebook, out, "--deployment", "docker", "--chunks", "3",
                      "--resources", "@map=cores=2")
    bound = targets(config)
    assert bound["/cell_2_map"] == [{"deployment": f"docker-cpu2-chunk{n}"} for n in (1, 2, 3)]
    for number in (1, 2, 3):
        assert config["deployments"][f"docker-cpu2-chunk{number}"] == {
            "type": "docker", "config": {"image": "nb2cwl-step:cpu", "cpus": 2}}
    assert config["deployments"]["docker"]["config"] == {"image": "nb2cwl-step:cpu"}
    result = streamflow_validate(out / "streamflow.yml")
    assert result.returncode == 0, (result.stdout + result.stderr)[-2000:]
    explained = subprocess.run([str(BIN / "nb2cwl"), "explain", str(notebook), "--deployment",
                                "docker", "--chunks", "3"], capture_output=True, text=True)
    assert "runs on docker (docker); a chunk of the scattered loop: 3 containers, one per " \
        "chunk" in explained.stdout, explained.stdout + explained.stderr
    one = _compile(notebook, tmp_path / "one", "--deployment", "docker", "--chunks", "1")
    assert "/cell_2_map" not in targets(one)  # one chunk: the step's own container
    cores = _compile(notebook, tmp_path / "cores", "--deployment", "docker")
    assert "/cell_2_map" not in targets(cores)  # chunks per core: they share one container


def test_helm_releases_request_gpus_and_nodes(tmp_path: Path) -> None:
    config = _compile(_gpu_notebook(tmp_path), tmp_path / "wf", "--deployment", "helm",
                      "--chart", str(CHART), "--resources", "cell_3=nodes=3,memory=4G")
    bound = targets(config)
    assert bound["/"] == {"deployment": "helm", "service": "worker"}
    gpu = config["deployments"][bound["/cell_2_map"]["deployment"]]["config"]
    assert gpu["chart"] == str(CHART)
    assert gpu["commandLineValues"] == "image=nb2cwl-step:gpu,gpus=1"
    assert bound["/cell_3"]["locations"] == 3
    multi = config["deployments"][bound["/cell_3"]["deployment"]]["config"]
    assert multi["commandLineValues"] == "resources.memory=4096Mi,replicas=3"


def test_targets_first_match_metadata_then_default(tmp_path: Path) -> None:
    notebook = write_notebook(
        tmp_path / "nb.ipynb",
        "a = 1",
        ("b = a + 1", {"workflow": {"version": "v1.0", "target": {"deployment": "docker"}}}),
        "c = b + 1",
        "print(c)",
    )
    config = _compile(notebook, tmp_path / "wf", "--deployment", "slurm",
                      "--target", "cell_2=local", "--target", "cell_*=helm",
                      "--target", "cell_2=docker", "--granularity", "cell")
    bound = targets(config)
    assert bound["/"]["deployment"] == "slurm"  # assemble and the rest: --deployment
    assert bound["/cell_2"] == {"deployment": "local"}  # the first matching --target
    assert bound["/cell_0"]["deployment"] == "helm"  # --target beats cell metadata
    assert bound["/cell_1"]["deployment"] == "helm"
    status, err = compile_cli(notebook, tmp_path / "wf2", "--target", "cell_0=slurm",
                              "--granularity", "cell")
    assert status == 0 and "target-not-bound" not in err  # the metadata target is bound
    bound = targets(load_yaml(tmp_path / "wf2" / "streamflow.yml"))
    assert bound["/cell_0"]["deployment"] == "slurm"
    assert bound["/cell_1"] == {"deployment": "docker"}  # from the cell's workflow.target
    assert "/cell_2" not in bound and bound["/"] == {"deployment": "local"}


def test_selectors_and_loop_parts(tmp_path: Path) -> None:
    notebook = _gpu_notebook(tmp_path)
    bound = targets(_compile(notebook, tmp_path / "a", "--target", "@gpu=slurm"))
    assert set(bound) == {"/", "/cell_2_map"}
    bound = targets(_compile(notebook, tmp_path / "b", "--target", "cell_2=docker"))
    assert {k for k, v in bound.items() if v["deployment"].startswith("docker")} == {
        "/cell_2_split", "/cell_2_map", "/cell_2_gather"}
    bound = targets(_compile(notebook, tmp_path / "c", "--target", "@map=helm",
                             "--target", "assemble=slurm"))
    assert bound["/cell_2_map"]["deployment"].startswith("helm")
    assert bound["/assemble"] == {"deployment": "slurm", "service": "default"}


def test_tagged_step_on_slurm_the_rest_local(tmp_path: Path) -> None:
    """The issue's example: --target train=slurm --target '*'=local."""
    notebook = write_notebook(
        tmp_path / "nb.ipynb", "data = list(range(10))",
        ("model = sum(data)", {"tags": ["nb2cwl:step=train"]}), "print(model)")
    config = _compile(notebook, tmp_path / "wf", "--target", "train=slurm",
                      "--target", "*=local")
    bound = targets(config)
    assert bound == {"/": {"deployment": "local"},
                     "/step_train": {"deployment": "slurm", "service": "default"}}


def test_compile_notebook_records_targets_and_needs(tmp_path: Path) -> None:
    options = CompileOptions(deployment="slurm", targets=(("cell_3", "local"),),
                             resources=(("cell_3", "cores=2"),))
    workflow = compile_notebook(str(_gpu_notebook(tmp_path)), options)
    by_name = {s.name: s for s in workflow.steps}
    assert by_name["cell_3"].target == "local"
    assert by_name["cell_3"].resources == Resources(cores=2)
    assert by_name["cell_2_map"].resources == Resources(gpus=1)
    # the first cell feeds only the loop: it runs in the loop's split (passes/loop_joins.py)
    first = next(s for s in workflow.steps if 0 in [c.index for c in s.cells])
    assert (first.name, first.target) == ("cell_2_split", "slurm")


def test_deployment_file_defines_new_names(tmp_path: Path) -> None:
    (tmp_path / "charts" / "pool").mkdir(parents=True)
    (tmp_path / "charts" / "pool" / "Chart.yaml").write_text("apiVersion: v2\nname: pool\n"
                                                             "version: 0.1.0\n")
    clusters = write_yaml(tmp_path / "clusters.yml", {"deployments": {
        "hpc": {"type": "slurm", "config": {"maxConcurrentJobs": 4, "services": {
            "base": {"partition": "batch", "account": "proj", "time": "01:00:00"}}},
            "nb2cwl": {"service": "base", "gpu": {"partition": "gpu"}}},
        "k8s": {"type": "helm", "config": {"chart": "charts/pool", "namespace": "jobs"}},
    }})
    notebook = write_notebook(
        tmp_path / "nb.ipynb", "a = 1",
        ("print(a)", {"workflow": {"version": "v1.0", "target": {"deployment": "k8s"}}}))
    out = tmp_path / "wf"
    config = _compile(notebook, out, "--deployment-file", str(clusters), "--deployment", "hpc",
                      "--resources", "cell_0=gpus=1")
    bound = targets(config)
    assert bound["/"] == {"deployment": "hpc", "service": "base"}
    assert bound["/cell_0"] == {"deployment": "hpc", "service": "base-gpu1"}
    assert bound["/cell_1"] == {"deployment": "k8s", "service": "worker"}
    hpc = config["deployments"]["hpc"]["config"]["services"]
    assert hpc["base-gpu1"] == {"partition": "gpu", "account": "proj", "time": "01:00:00",
                                "gres": "gpu:1"}
    assert hpc["base"]["partition"] == "batch"
    # relative to the file that defines it, not to where StreamFlow runs
    assert config["deployments"]["k8s"]["config"]["chart"] == str(tmp_path / "charts" / "pool")
    assert "nb2cwl" not in config["deployments"]["hpc"]
    result = streamflow_validate(out / "streamflow.yml")
    assert result.returncode == 0, (result.stdout + result.stderr)[-2000:]


def test_a_single_deployment_in_the_file_is_the_default(tmp_path: Path) -> None:
    box = write_yaml(tmp_path / "box.yml", {"deployments": {
        "box": {"type": "docker", "config": {"image": "python:3.11-slim"}}}})
    config = _compile(write_notebook(tmp_path / "nb.ipynb", "x = 1"), tmp_path / "wf",
                      "--deployment-file", str(box))
    assert targets(config) == {"/": {"deployment": "box"}}
    assert config["deployments"] == {"box": {"type": "docker",
                                             "config": {"image": "python:3.11-slim"}}}


def test_profiles_are_documented_deployment_files(tmp_path: Path) -> None:
    for kind in ("local", "docker", "slurm", "helm"):
        text = (PROFILES / f"{kind}.yml").read_text()
        assert text.startswith("# nb2cwl deployment profile")
        assert list(load_yaml(PROFILES / f"{kind}.yml")["deployments"]) == [kind]
    notebook = write_notebook(tmp_path / "nb.ipynb", "x = 1")
    config = _compile(notebook, tmp_path / "wf", "--deployment-file",
                      str(PROFILES / "helm.yml"))
    assert config["deployments"]["helm"]["config"]["chart"] == str(CHART)


BAD_FILES = {
    "not-yaml.yml": ("deployments: [unclosed", "not valid YAML"),
    "no-deployments.yml": ("version: v1.0\n", "expected a 'deployments' mapping"),
    "bad-name.yml": ("deployments:\n  MyCluster: {type: slurm, config: {}}\n",
                     "must start with a lowercase letter"),
    "no-type.yml": ("deployments:\n  hpc: {config: {}}\n", "needs a 'type'"),
    "mincpus.yml": ("deployments:\n  hpc:\n    type: slurm\n    config:\n      services:\n"
                    "        default: {mincpus: 4}\n", "remove 'mincpus'"),
    "addhost.yml": ("deployments:\n  hpc: {type: docker, config: {image: x, addHost: [a:1]}}\n",
                    "remove 'addHost'"),
    "wait.yml": ("deployments:\n  hpc: {type: helm, config: {chart: c, wait: watcher}}\n",
                 "remove 'wait'"),
    "helm3.yml": ("deployments:\n  hpc: {type: helm3, config: {chart: c}}\n",
                  "use type: helm"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_deployment_files_are_one_line_errors(name: str, tmp_path: Path) -> None:
    text, expected = BAD_FILES[name]
    (tmp_path / name).write_text(text)
    notebook = write_notebook(tmp_path / "nb.ipynb", "x = 1")
    status, err = compile_cli(notebook, tmp_path / "wf", "--deployment-file",
                              str(tmp_path / name), "--deployment", "hpc")
    assert status == 1
    assert expected in err and err.startswith("nb2cwl: error: ") and err.count("\n") == 1
    assert not (tmp_path / "wf").exists()  # nothing written


BAD_OPTIONS = {
    "unknown deployment": (["--deployment", "cluster"], "deployment 'cluster', which is not"),
    "typo in --target": (["--target", "cell_9=slurm"], "no step is called 'cell_9'"),
    "unknown selector": (["--target", "@gpus=slurm"], "unknown selector"),
    "bad resource key": (["--resources", "cell_0=cpu=4"], "'cpu=4' is not one of"),
    "bad memory": (["--resources", "cell_0=memory=lots"], "memory must be a size"),
    "no pattern": (["--resources", "cores=4"], "name the steps first"),
    "nodes on docker": (["--deployment", "docker", "--resources", "cell_0=nodes=2"],
                        "runs on one machine"),
    "missing chart": (["--deployment", "helm", "--chart", "nowhere"], "not a chart directory"),
    "missing file": (["--deployment-file", "nowhere.yml"], "cannot read it"),
}


@pytest.mark.parametrize("case", sorted(BAD_OPTIONS))
def test_bad_options_are_one_line_errors(case: str, tmp_path: Path) -> None:
    options, expected = BAD_OPTIONS[case]
    notebook = write_notebook(tmp_path / "nb.ipynb", "x = 1", "print(x)")
    status, err = compile_cli(notebook, tmp_path / "wf", *options)
    assert status in (1, 2), err
    # nb2cwl's own errors are one line; argparse's (status 2) end with one after the usage
    assert expected in err.splitlines()[-1] and (status == 2 or err.count("\n") == 1), err


def test_undefined_metadata_target_names_the_cell(tmp_path: Path) -> None:
    notebook = write_notebook(
        tmp_path / "nb.ipynb", "x = 1",
        ("print(x)", {"workflow": {"version": "v1.0", "target": {"deployment": "hpc"}}}))
    status, err = compile_cli(notebook, tmp_path / "wf")
    assert status == 1
    assert "cell 1" in err and "cell metadata workflow.target" in err and "'hpc'" in err


def test_warnings_for_needs_a_deployment_cannot_meet(tmp_path: Path) -> None:
    notebook = write_notebook(tmp_path / "nb.ipynb", "x = 1", "print(x)")
    cores = (os.cpu_count() or 1) + 1
    status, err = compile_cli(notebook, tmp_path / "wf", "--resources", f"cell_0=cores={cores}",
                              "--image", "x")
    assert status == 0
    assert "[resources-exceed-local]" in err and "[option-unused]" in err


def test_resource_specs() -> None:
    assert parse_resources("cores=4, memory=8G,gpus=0,nodes=2") == Resources(4, 8192, 0, 2)
    assert parse_memory("512M") == 512 and parse_memory("2048") == 2048
    assert parse_memory("1GiB") == 1024 and parse_memory("1.5g") == 1536
    assert parse_memory("1T") == 1 << 20
    for bad in ("cores=0", "nodes=0", "gpus=-1", "gpus=one", "memory=1K", ""):
        with pytest.raises(BackendError):
            parse_resources(bad)


@pytest.mark.parametrize("command", ["compile", "run"])
def test_help_documents_the_deployment_options(command: str) -> None:
    result = subprocess.run([str(BIN / "nb2cwl"), command, "--help"], capture_output=True,
                            text=True, check=True)
    for option in ("--deployment", "--target", "--resources", "--image", "--chart",
                   "--deployment-file", "@gpu", "@map"):
        assert option in result.stdout


def test_explain_says_what_each_step_asks_slurm_for(tmp_path: Path) -> None:
    """On a Slurm deployment, explain tells per step the nodes and tasks its job asks for and
    why: training across nodes, a chunk of a scattered loop, or one task."""
    notebook = write_notebook(
        tmp_path / "nb.ipynb", "import numpy as np\nimport tensorflow as tf\nimport keras",
        "items = list(range(8))\nout = [np.sqrt(np.arange(10**5) * i).sum() for i in items]",
        "model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])\n"
        "model.compile(optimizer='sgd', loss='mse')\n"
        "model.fit(np.zeros((8, 4)), np.zeros(8), epochs=1, verbose=0)")
    command = [sys.executable, "-m", "nb2cwl", "explain", str(notebook), "--deployment",
               "slurm", "--resources", "@train=nodes=2", "--chunks", "2"]
    text = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    placed = [line.strip() for line in text.splitlines() if line.strip().startswith("runs on")]
    assert "runs on slurm (slurm, service default-node2): 2 nodes x 1 task; training across " \
        "2 nodes: one worker per node" in text, text
    assert any("1 node x 1 task; a chunk of the scattered loop" in line for line in placed)
    assert any(line.endswith("one task: the step asks for nothing more") for line in placed)
    data = json.loads(subprocess.run([*command, "--json"], capture_output=True, text=True,
                                     check=True).stdout)
    trained = [s["placement"] for s in data["steps"] if s["training"]]
    assert [(p["nodes"], p["tasks_per_node"], p["type"]) for p in trained] == [(2, 1, "slurm")]
    local = subprocess.run(command[:5], capture_output=True, text=True, check=True).stdout
    assert "runs on" not in local  # on this machine alone, nothing to say
