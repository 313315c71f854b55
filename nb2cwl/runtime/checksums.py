"""Checksums of a reproducible bundle, checked before a step loads or runs anything.

A bundle made by `nb2cwl export` runs every step through `guard`: each tool's command starts
Python with a short bootstrap that checks the runtime's zip (`nb2cwl_runtime.zip`, which holds
this file) against the sha256 written into the tool, then calls `guard` from it. `guard`
checks the seal (`nb2cwl-seal.json`, whose sha256 is also in the tool), then every bundle file
the step was given (its script, the runtime's zip, the notebook, the input files), and only
then runs the step's script. Any difference is reported by the file's
path in the bundle, and the step exits with status 1 before anything from the bundle is loaded.

Standard library only: it runs before anything else from the bundle may be trusted, and
`nb2cwl verify` uses the same functions.
"""

from __future__ import annotations

import hashlib
import json
import os
import runpy
import sys
from typing import Any

SEAL = "nb2cwl-seal.json"
SUMS = "CHECKSUMS.sha256"
SEAL_FLAG = "--nb2cwl-seal"
VERIFIED = "nb2cwl-verified.json"
_CHUNK = 1 << 20


def sha256_bytes(data: bytes) -> str:
    """The hex sha256 of `data`."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str) -> str:
    """The hex sha256 of the file at `path`."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while True:
            chunk = handle.read(_CHUNK)
            if not chunk:
                return digest.hexdigest()
            digest.update(chunk)


def list_files(root: str) -> list[str]:
    """Every file under `root`, as sorted '/'-separated paths relative to it."""
    found: list[str] = []
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        rel = os.path.relpath(folder, root)
        for name in names:
            path = name if rel == "." else os.path.join(rel, name)
            found.append(path.replace(os.sep, "/"))
    return sorted(found)


def format_sums(sums: dict[str, str]) -> str:
    """`sha256sum` format: one 'HEX  path' line per file, sorted by path."""
    return "".join(f"{sums[path]}  {path}\n" for path in sorted(sums))


def parse_sums(text: str) -> dict[str, str]:
    """Read `sha256sum` lines; raise ValueError naming the first malformed line."""
    sums: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        digest, sep, path = line.partition("  ")
        path = path[1:] if path.startswith("*") else path
        if not sep or len(digest) != 64 or not path or any(
                c not in "0123456789abcdef" for c in digest):
            raise ValueError(f"line {number} is not 'SHA256  PATH'")
        sums[path] = digest
    return sums


def compare(root: str, rel: str, expected: dict[str, str]) -> list[str]:
    """Problems of the file or folder `root` standing for bundle path `rel`, by bundle path.

    A folder must hold exactly the files `expected` lists under `rel/`: an extra file (for
    example a planted `__pycache__/*.pyc`) is a problem too.
    """
    if os.path.isdir(root):
        prefix = rel.rstrip("/") + "/"
        wanted = {p[len(prefix):]: d for p, d in expected.items() if p.startswith(prefix)}
        present = list_files(root)
        problems = [f"{prefix}{p}: unexpected file" for p in present if p not in wanted]
        for sub, digest in sorted(wanted.items()):
            path = os.path.join(root, *sub.split("/"))
            if not os.path.isfile(path):
                problems.append(f"{prefix}{sub}: missing")
            elif sha256_file(path) != digest:
                problems.append(f"{prefix}{sub}: changed (sha256 differs)")
        return problems
    if rel not in expected:
        return [f"{rel}: not in the seal"]
    if not os.path.isfile(root):
        return [f"{rel}: missing"]
    if sha256_file(root) != expected[rel]:
        return [f"{rel}: changed (sha256 differs)"]
    return []


def _groups(argv: list[str]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {"": []}
    current = groups[""]
    for word in argv:
        if word.startswith("--"):
            current = groups.setdefault(word, [])
        else:
            current.append(word)
    return groups


def _fail(step: str, problems: list[str]) -> int:
    for problem in problems:
        sys.stderr.write(f"nb2cwl: bundle check failed in step {step}: {problem}\n")
    sys.stderr.write(f"nb2cwl: step {step} stopped before loading anything: the bundle's "
                     "files differ from the ones it was made with (run `nb2cwl verify` on "
                     "the bundle)\n")
    return 1


def check_step(argv: list[str]) -> tuple[str, dict[str, Any], list[str], list[str]]:
    """Check a sealed step's files; return (step, seal, problems, argv without the seal)."""
    seal_digest, step = argv[0], argv[1]
    rest = list(argv[2:])
    if SEAL_FLAG not in rest:
        return step, {}, [f"{SEAL}: not given to the step"], rest
    at = rest.index(SEAL_FLAG)
    seal_path = rest[at + 1]
    del rest[at:at + 2]
    with open(seal_path, "rb") as handle:
        data = handle.read()
    if sha256_bytes(data) != seal_digest:
        return step, {}, [f"{SEAL}: changed (sha256 differs)"], rest
    seal: dict[str, Any] = json.loads(data)
    ports: dict[str, str] = seal["steps"].get(step, {})
    groups = _groups(rest)
    problems: list[str] = []
    for flag, rel in sorted(ports.items()):
        given = groups.get(flag, [])
        if not given:
            problems.append(f"{rel}: not given to the step")
            continue
        problems += compare(given[0], rel, seal["files"])
    return step, seal, problems, rest


def guard(argv: list[str]) -> int:
    """Check the step's files against the seal, then run its script (see the module doc).

    `argv` is: the seal's sha256, the step's name, then the tool's command line, which holds
    `--nb2cwl-seal SEAL` and the step script's own arguments.
    """
    step, seal, problems, rest = check_step(argv)
    if problems:
        return _fail(step, problems)
    if step == seal.get("verify_step"):
        with open(VERIFIED, "w", encoding="utf-8") as handle:
            json.dump({"verified": sorted(seal["files"])}, handle, indent=1)
        return 0
    sys.dont_write_bytecode = True  # leave the bundle as it was: no __pycache__ in it
    hash_seed = seal.get("hash_seed")
    if hash_seed is not None and os.environ.get("PYTHONHASHSEED") != hash_seed:
        sys.stderr.write(f"nb2cwl: warning: step {step} runs without PYTHONHASHSEED="
                         f"{hash_seed}: the order of sets of strings may differ from the "
                         "original run\n")
    _seed(seal.get("seeds", {}))
    script = rest[0]
    sys.argv = rest
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))  # as `python3 script.py`
    runpy.run_path(script, run_name="__main__")
    return 0


def _seed(seeds: dict[str, int]) -> None:
    # the state a step starts from when it inherits none; a seed in the notebook, or the state
    # handed on by the previous step that drew numbers, replaces it
    if "random" in seeds:
        import random

        random.seed(seeds["random"])
    if "numpy" in seeds:  # numpy costs 0.1 s to import: seed it when something imports it
        sys.meta_path.insert(0, _SeedNumpy(seeds["numpy"]))


class _SeedNumpy:
    """Seeds numpy's global generator as soon as `numpy.random` is imported, by anyone."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "numpy.random":
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module
        seed = self.seed

        def exec_module(module: Any) -> None:
            run(module)
            module.seed(seed)

        loader.exec_module = exec_module
        return spec
