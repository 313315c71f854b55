"""The StreamFlow process of `nb2cwl run`: what it defers for a run without Kubernetes or Helm."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from deployment_cases import write_notebook

from nb2cwl.launch import may_use_kubernetes

CHECK = textwrap.dedent("""
    import asyncio, sys
    from nb2cwl import engine_imports

    engine_imports.defer_connectors(engine_imports.KUBERNETES)
    engine_imports.defer_connectors(engine_imports.SSH)
    engine_imports.defer_http()
    engine_imports.defer_expressions()
    from streamflow.main import run  # noqa: F401
    assert "antlr4" not in sys.modules, "the ECMAScript lexer loaded early"
    loaded = {m.split(".")[0] for m in sys.modules if not m.startswith("streamflow")}
    assert not loaded & {"kubernetes_asyncio", "asyncssh"}, "loaded early"
    assert "aiohttp.client" not in sys.modules, "aiohttp loaded early"
    from streamflow.config.validator import SfValidator
    from streamflow.deployment.connector import connector_classes
    from streamflow.deployment.connector.queue_manager import SlurmConnector

    # a Helm or SSH deployment still validates against StreamFlow's own schema ...
    SfValidator().validate({"version": "v1.0", "deployments": {
        "k8s": {"type": "helm", "config": {"chart": "containers/helm/nb2cwl-worker"}},
        "far": {"type": "ssh", "config": {"nodes": ["node1"], "username": "me"}}}})
    for wrong in ({"type": "helm", "config": {"chart": 3}},
                  {"type": "ssh", "config": {"nodes": "node1", "bogus": 1}}):
        try:
            SfValidator().validate({"version": "v1.0", "deployments": {"d": wrong}})
        except Exception:
            pass
        else:
            raise AssertionError(f"a wrong configuration validated: {wrong}")
    # ... and the connector StreamFlow makes for it is the real one, imported then
    connector = connector_classes["helm"](deployment_name="k8s", config_dir="/tmp",
                                          chart="chart")
    assert type(connector).__name__ == "Helm4Connector"
    assert "kubernetes_asyncio" in sys.modules
    far = connector_classes["ssh"](deployment_name="far", config_dir="/tmp",
                                   nodes=["node1"], username="me")
    assert type(far).__module__ == "streamflow.deployment.connector.ssh", type(far)
    assert type(far).__name__ == "SSHConnector" and "asyncssh" in sys.modules
    # a Slurm deployment reached over SSH (`hostname`) gets the real SSH connector too
    slurm = SlurmConnector(deployment_name="s", config_dir="/tmp", connector=None,
                           service=None, hostname="node1", username="me")
    assert type(slurm.connector).__module__ == "streamflow.deployment.connector.ssh"
    # an input given as a URL downloads with the real aiohttp, imported at its first use
    from streamflow.data import remotepath
    assert remotepath.aiohttp.ClientSession.__module__ == "aiohttp.client"
    assert sys.modules["aiohttp"].ClientTimeout.__module__.startswith("aiohttp")
    # a JavaScript expression's inputs are still found, by the real resolver
    from streamflow.cwl.utils import resolve_dependencies
    assert resolve_dependencies("$(inputs.a.b)") == {"a"}
    assert resolve_dependencies("${ return inputs.x + inputs.y; }", full_js=True) == {"x", "y"}
    assert "antlr4" in sys.modules
    print("ok")
""")


def test_kubernetes_ssh_http_and_expressions_are_loaded_only_when_a_run_uses_them() -> None:
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")


def test_runs_that_may_use_kubernetes(tmp_path: Path) -> None:
    plain = tmp_path / "plain.ipynb"
    plain.write_text('{"cells": [], "metadata": {}}')
    own = tmp_path / "own.ipynb"
    own.write_text('{"metadata": {"workflow": {"deployments": {"c": {"type": "helm"}}}}}')
    profile = tmp_path / "cluster.yml"
    profile.write_text("deployments:\n  c:\n    type: kubernetes\n")
    assert not may_use_kubernetes(["local", None, "slurm"], [None, str(plain)])
    assert may_use_kubernetes(["helm"], [str(plain)])
    assert may_use_kubernetes([None], [str(own)])
    assert may_use_kubernetes([None], [str(profile), str(plain)])
    assert may_use_kubernetes([None], [str(tmp_path / "missing.yml")])  # in doubt


READS = textwrap.dedent("""
    import collections, sys
    import cwl_utils.parser as parser
    from nb2cwl import engine

    reads = collections.Counter()
    load = parser.load_document_by_uri

    def counted(path, *args, **kwargs):
        reads[str(path).rsplit("/", 1)[-1]] += 1
        return load(path, *args, **kwargs)

    parser.load_document_by_uri = counted
    if sys.argv[2] == "once":
        engine._read_each_tool_once()
    from streamflow.main import run
    sys.argv = ["streamflow", "run", "--validate", "--outdir", sys.argv[1] + "/v",
                sys.argv[1] + "/streamflow.yml"]
    status = run()
    print(dict(reads))
    assert status == 0
""")


def test_the_engine_reads_each_tool_file_once(tmp_path: Path) -> None:
    """cwl-utils' type check reads a step's tool once per port, StreamFlow once more; the
    engine reads each once, and StreamFlow still translates the same workflow."""
    out = _compiled_scatter(tmp_path)
    reads = {}
    for mode in ("plain", "once"):
        done = subprocess.run([sys.executable, "-c", READS, str(out), mode], text=True,
                              capture_output=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        reads[mode] = eval(done.stdout.strip().splitlines()[-1])  # a dict's repr
    tools = [name for name in reads["plain"] if name != "workflow.cwl"]
    assert tools and any(reads["plain"][name] > 2 for name in tools), reads
    assert all(reads["once"][name] == 1 for name in tools), reads
    assert reads["once"]["workflow.cwl"] == reads["plain"]["workflow.cwl"]


def _compiled_scatter(tmp_path: Path) -> Path:
    """A notebook with a scattered comprehension, compiled into tmp_path/wf."""
    notebook = write_notebook(tmp_path / "nb.ipynb", "import math\nxs = list(range(8))",
                              "ys = [math.factorial(x) for x in xs]\nprint(ys)")
    out = tmp_path / "wf"
    subprocess.run([sys.executable, "-m", "nb2cwl", str(notebook), "-o", str(out)],
                   check=True, capture_output=True, timeout=120)
    return out


def test_the_launcher_starts_streamflow_before_importing_the_compiler() -> None:
    """`nb2cwl run` starts StreamFlow's process before it compiles: what it imports to get
    there must not include the compiler's heavy libraries (cwl-utils, nbformat, astroid), or
    StreamFlow starts that much later."""
    check = ("import sys\nimport nb2cwl.run_command, nb2cwl.launch\n"
             "heavy = sorted({m.split('.')[0] for m in sys.modules} & "
             "{'cwl_utils', 'nbformat', 'astroid', 'IPython', 'schema_salad'})\n"
             "assert not heavy, heavy\nprint('ok')")
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
