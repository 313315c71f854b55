"""Each layer imports only earlier layers; the runtime imports nothing else from nb2cwl."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "nb2cwl"
ORDER = ["frontend", "analysis", "ir", "passes", "backends"]
SHARED = {"nb2cwl.errors", "nb2cwl.options"}  # cross-cutting: locations and error types


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return {name for name in found if name == "nb2cwl" or name.startswith("nb2cwl.")}


@pytest.mark.parametrize("layer", ORDER)
def test_layer_imports_only_earlier_layers(layer: str) -> None:
    allowed = {f"nb2cwl.{earlier}" for earlier in ORDER[: ORDER.index(layer) + 1]} | SHARED
    for module in (PACKAGE / layer).rglob("*.py"):  # subpackages too
        for name in _imports(module):
            assert any(name == a or name.startswith(a + ".") for a in allowed), (
                f"{module.relative_to(PACKAGE)} imports {name}")


def test_runtime_imports_nothing_from_nb2cwl() -> None:
    for module in (PACKAGE / "runtime").rglob("*.py"):
        assert _imports(module) == set(), module.name


def test_errors_and_ir_know_no_later_layer() -> None:
    for module in [PACKAGE / "errors.py", *(PACKAGE / "ir").glob("*.py")]:
        for name in _imports(module):
            assert not name.startswith(("nb2cwl.passes", "nb2cwl.backends", "nb2cwl.runtime"))


def test_nothing_below_knows_the_integrations() -> None:
    """The Jupyter side calls the public API; no other module imports it (the package root
    only names it for `%load_ext nb2cwl`, without importing it until then)."""
    for module in PACKAGE.rglob("*.py"):
        if "integrations" in module.relative_to(PACKAGE).parts or module == PACKAGE / \
                "__init__.py":
            continue
        for name in _imports(module):
            assert not name.startswith("nb2cwl.integrations"), module.relative_to(PACKAGE)
