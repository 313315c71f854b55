"""The random state of a bundle: the seeds the notebook sets and where reruns start from.

`seed_record` finds the calls in the notebook's cells that seed a generator, picks the state
the global generators of `random` and `numpy.random` start from in a step that inherits none,
and notes every step that draws from a global generator nobody seeded, whose numbers the
original run cannot reproduce; it also says in words how a bundle's steps handle random state.
"""

from __future__ import annotations

import ast
from typing import Any

from nb2cwl.backends.bundle.names import START_SEED
from nb2cwl.backends.environment_lock import EnvironmentLock
from nb2cwl.backends.naming import HASH_SEED
from nb2cwl.ir.model import Workflow

_SEEDERS = {
    ("random", "seed"): "random", ("np.random", "seed"): "numpy",
    ("numpy.random", "seed"): "numpy",
}


def seed_record(workflow: Workflow, lock: EnvironmentLock) -> dict[str, Any]:
    """The seeds the notebook sets, the start state bundle runs use, and unseeded draws."""
    found: list[dict[str, Any]] = []
    seeded_cells: dict[str, set[int]] = {"random": set(), "numpy": set()}
    for step in workflow.steps:
        for cell in step.cells:
            for call in _seed_calls(cell.code):
                found.append({"cell": cell.index, "id": cell.cell_id, "step": step.name, **call})
                if call.get("generator"):
                    seeded_cells[call["generator"]].add(cell.index)
    start: dict[str, int] = {"random": START_SEED}
    if "numpy" in lock.imports:
        start["numpy"] = START_SEED
    notes: list[str] = []
    unseeded: list[dict[str, Any]] = []
    for step in workflow.steps:
        cells = [c.index for c in step.cells]
        for generator in ("random", "numpy"):
            state = f"rng:{generator}"
            if any(i.var == state and i.producer for i in step.inputs):
                continue  # it continues the state an earlier step left
            draws = (state in step.outputs or any(i.var == state for i in step.inputs)
                     or any(_draws(c.code, generator) for c in step.cells))
            if not draws or seeded_cells[generator] & set(cells):
                continue
            unseeded.append({"generator": generator, "step": step.name, "cells": cells})
            notes.append(f"{workflow.shown_cells(cells[:1])} draws from the global {generator} "
                         "generator without seeding it: the original run's numbers cannot be "
                         f"reproduced; reruns of the bundle start it from seed {START_SEED} "
                         "and agree with each other")
    return {
        "python_hash_seed": HASH_SEED,
        "start": start,
        "notebook_seeds": found,
        "unseeded_draws": unseeded,
        "notes": notes,
        "how": (f"Every step runs with PYTHONHASHSEED={HASH_SEED}. A step that inherits no "
                "random state from an earlier step starts the global generators of random "
                f"and numpy.random (when something imports numpy) from seed {START_SEED}; a "
                "seed set in the notebook, or the state handed on by the previous step that "
                "drew numbers, replaces it, as in Jupyter."),
    }


_NOT_DRAWS = {"seed", "Random", "SystemRandom", "getstate", "setstate", "get_state",
              "set_state", "default_rng", "RandomState", "Generator", "SeedSequence",
              "BitGenerator", "MT19937", "PCG64", "PCG64DXSM", "Philox", "SFC64"}
_GENERATORS = {"random": "random", "np.random": "numpy", "numpy.random": "numpy"}


def _draws(code: str, generator: str) -> bool:
    """True when `code` calls the global `generator` (random.random(), np.random.rand())."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    for node in _executed(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = ast.unparse(node.func.value)
            if _GENERATORS.get(owner) == generator and node.func.attr not in _NOT_DRAWS:
                return True
    return False


def _executed(tree: ast.AST) -> list[ast.AST]:
    """The nodes a cell runs when it runs: not the bodies of the functions it defines."""
    found: list[ast.AST] = []
    pending = [tree]
    while pending:
        node = pending.pop()
        found.append(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                pending += child.decorator_list if not isinstance(child, ast.Lambda) else []
                continue
            pending.append(child)
    return found


def _seed_calls(code: str) -> list[dict[str, Any]]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    calls = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = ast.unparse(node.func)
        owner, _, attr = func.rpartition(".")
        generator = _SEEDERS.get((owner, attr))
        seeding = (generator is not None or attr in (
            "manual_seed", "set_seed", "set_random_seed", "default_rng", "RandomState",
            "Random", "PRNGKey") or any(k.arg in ("random_state", "seed") for k in node.keywords))
        if not seeding:
            continue
        text = ast.unparse(node)
        calls.append({"line": node.lineno, "call": text if len(text) <= 120 else text[:117] + "...",
                      **({"generator": generator} if generator else {})})
    return calls
