"""The Helm chart for StreamFlow's helm connector, checked offline (no Kubernetes cluster here).

helm-python-sdk embeds Helm 4's Go library: it lints the chart and renders it exactly as
`helm install` would, with the values nb2cwl writes into streamflow.yml. kubernetes-validate
checks the rendered manifests against the Kubernetes API schemas. What cannot run here: the
install itself, pods, and StreamFlow executing steps in them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deployment_cases import PROFILES, compile_cli, load_yaml, streamflow_validate, targets
from deployment_cases import write_notebook as notebook
from engines import engine_unavailable
from ruamel.yaml import YAML

pytestmark = pytest.mark.helm
CHART = PROFILES.parent / "containers" / "helm" / "nb2cwl-worker"
KUBERNETES = "1.30.0"  # schemas kubernetes-validate checks the manifests against
RELEASE = "release-3f2a"

try:
    import helm_python as helm
    import kubernetes_validate
except ImportError as exc:  # test dependencies: pip install -e .[test]
    helm = kubernetes_validate = None
    MISSING = str(exc)


@pytest.fixture(scope="module", autouse=True)
def _sdks() -> None:
    if helm is None:
        engine_unavailable(f"Helm checks need helm-python-sdk and kubernetes-validate: {MISSING}")


def _render(values: dict[str, Any]) -> list[dict[str, Any]]:
    """The chart's manifests for `values`, as `helm install RELEASE CHART` would apply them."""
    with helm.Chart.load(str(CHART)) as chart:
        chart.validate_schema(values)
        rendered = chart.render(values, name=RELEASE, namespace="nb2cwl", is_install=True)
    documents = []
    for path, text in sorted(rendered.items()):
        if path.endswith(".yaml"):
            documents += [d for d in YAML(typ="safe").load_all(text) if d]
    return documents


def _pod_spec(documents: list[dict[str, Any]]) -> dict[str, Any]:
    (deployment,) = [d for d in documents if d["kind"] == "Deployment"]
    return deployment


def _validate(documents: list[dict[str, Any]]) -> None:
    for document in documents:
        kubernetes_validate.validate(document, KUBERNETES, strict=True)


def test_chart_lints_clean() -> None:
    report = helm.lint(str(CHART), strict=True, kube_version=f"v{KUBERNETES}")
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_default_pool_renders_valid_manifests() -> None:
    documents = _render({})
    _validate(documents)
    deployment = _pod_spec(documents)
    # StreamFlow's helm connector finds the pods by this label, and runs steps in `worker`
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert labels["app.kubernetes.io/instance"] == RELEASE
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["name"] == "worker"
    assert container["resources"]["requests"] == {"cpu": "1", "memory": "2Gi"}
    assert "nvidia.com/gpu" not in container["resources"]["limits"]
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert volumes["shm"]["emptyDir"]["medium"] == "Memory"


def test_values_nb2cwl_writes_render_gpu_pods(tmp_path: Path) -> None:
    """Compile for the helm profile; render each release with the values streamflow.yml sets."""
    source = notebook(tmp_path / "train.ipynb",
                      "from nb2cwl import gpu_task\nxs = list(range(4))",
                      "@gpu_task\ndef fit(x):\n    return x + 1",
                      "models = [fit(x) for x in xs]",
                      "print(models)")
    out = tmp_path / "wf"
    status, err = compile_cli(source, out, "--deployment", "helm", "--image", "reg/nb:1",
                              "--resources", "cell_3=cores=4,memory=6G,gpus=2,nodes=3")
    assert status == 0, err
    config = load_yaml(out / "streamflow.yml")
    assert streamflow_validate(out / "streamflow.yml").returncode == 0
    bound = targets(config)
    checked = 0
    for step, gpus, replicas in (("/cell_2_map", 1, 2), ("/cell_3", 2, 3)):
        target = bound[step]
        entry = config["deployments"][target["deployment"]]
        assert entry["type"] == "helm" and entry["config"]["chart"] == str(CHART)
        values = helm.parse_set_string(entry["config"]["commandLineValues"])
        documents = _render(values)
        _validate(documents)
        deployment = _pod_spec(documents)
        spec = deployment["spec"]["template"]["spec"]
        (container,) = spec["containers"]
        assert container["name"] == target["service"]
        assert container["image"] == "reg/nb:1"
        assert container["resources"]["limits"]["nvidia.com/gpu"] == gpus
        assert container["resources"]["requests"]["nvidia.com/gpu"] == gpus
        assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in \
            spec["tolerations"]
        assert deployment["spec"]["replicas"] == replicas
        checked += 1
    assert bound["/cell_3"]["locations"] == 3
    cell_3 = helm.parse_set_string(config["deployments"][bound["/cell_3"]["deployment"]]
                                   ["config"]["commandLineValues"])
    container = _pod_spec(_render(cell_3))["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["requests"]["cpu"] == "4"
    assert container["resources"]["limits"]["memory"] == "6144Mi"
    assert checked == 2


def test_schema_rejects_bad_values() -> None:
    with helm.Chart.load(str(CHART)) as chart:
        for bad in ({"gpus": -1}, {"replicas": 0}, {"resources": {"disk": "1Gi"}},
                    {"gpu": 1}):
            with pytest.raises(helm.HelmValuesError):
                chart.validate_schema(bad)
