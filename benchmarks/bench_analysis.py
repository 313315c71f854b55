"""Analysis speed: time nb2cwl's analysis of synthetic notebooks of 10, 100 and 1000 code cells.

Usage: python benchmarks/bench_analysis.py [--quick]
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import itertools
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from nb2cwl.analysis.dataflow import build_dataflow
from nb2cwl.analysis.program import analyse_notebook
from nb2cwl.api import compile_notebook
from nb2cwl.frontend.reader import read_notebook

CLASS = """class Accumulator:
    def __init__(self, start):
        self.items = [start]

    def add(self, x):
        self.items.append(x)
        return self

    def total(self):
        return sum(self.items)


"""
MODULES = ["math", "json", "statistics", "itertools", "functools", "collections", "re", "string"]


class _Gen:
    """Emit cells that only use names bound by earlier cells, tracking each name's kind."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.n = 0
        self.names: dict[str, list[str]] = {k: [] for k in ("int", "list", "dict", "str", "fn")}
        self.has_class = False

    def new(self, kind: str) -> str:
        self.n += 1
        name = f"{kind}_{self.n}"
        self.names[kind].append(name)
        return name

    def pick(self, kind: str) -> str:
        return self.rng.choice(self.names[kind][-30:])  # mostly recent names, like real notebooks

    def first_cells(self) -> list[str]:
        i, lst, d, s = self.new("int"), self.new("list"), self.new("dict"), self.new("str")
        return [
            "import math\nimport random\nfrom collections import Counter, defaultdict",
            f"{i} = 7\n{lst} = [1, 2, 3, 5, 8]\n{d} = {{'a': 1, 'b': 2}}\n{s} = 'sample'",
        ]

    def cell(self) -> str:
        makers: list[Callable[[], str]] = [
            self.assign,
            self.assign,
            self.mutate_list,
            self.mutate_dict,
            self.function,
            self.call,
            self.loop,
            self.comprehension,
            self.text,
            self.imports,
            self.klass,
        ]
        return self.rng.choice(makers)()

    def assign(self) -> str:
        a, b, lst = self.pick("int"), self.pick("int"), self.pick("list")
        new = self.new("int")
        expr = self.rng.choice(
            [
                f"({a} * 3 + {b}) % 997",
                f"{a} + len({lst})",
                f"max({lst}[-3:] + [{b}])",
                f"int(math.sqrt({a} * {a} + 1))",
            ]
        )
        return f"{new} = {expr}\nprint('{new} =', {new})"

    def mutate_list(self) -> str:
        lst, a = self.pick("list"), self.pick("int")
        return self.rng.choice(
            [
                f"{lst}.append({a})",
                f"{lst}[0] = {a} % 100",
                f"{lst}.extend([{a}, {a} + 1])\n{lst}.sort()",
            ]
        )

    def mutate_dict(self) -> str:
        d, a, s = self.pick("dict"), self.pick("int"), self.pick("str")
        return self.rng.choice(
            [
                f"{d}[{s}] = {a}",
                f"{d}.update({{'n{self.n}': {a}}})",
                f"{d}.setdefault('total', 0)\n{d}['total'] += {a}",
            ]
        )

    def function(self) -> str:
        g = self.pick("int")  # a global read when the function runs
        fn = self.new("fn")
        body = self.rng.choice(
            [
                f"return (x + {g}) % 1000",
                "return x * 2 - 1",
                f"total = 0\n    for k in range(x % 5):\n        total += k + {g}"
                "\n    return total % 1000",
            ]
        )
        return f'def {fn}(x):\n    """Synthetic helper."""\n    {body}'

    def call(self) -> str:
        if not self.names["fn"]:
            return self.function()
        fn, a = self.pick("fn"), self.pick("int")
        new = self.new("int")
        return f"{new} = {fn}({a})"

    def loop(self) -> str:
        lst, a = self.pick("list"), self.pick("int")
        out = self.new("list")
        return (
            f"{out} = []\nfor i, v in enumerate({lst}[:6]):\n"
            f"    if (v + i) % 2 == 0:\n        {out}.append(v + {a} % 10)\n"
            f"    else:\n        {out}.append(i)"
        )

    def comprehension(self) -> str:
        lst, d = self.pick("list"), self.pick("dict")
        if self.rng.random() < 0.5:
            return f"{self.new('list')} = [v * v % 100 for v in {lst}[:8] if v % 3]"
        return f"{self.new('dict')} = {{k: v for k, v in {d}.items() if isinstance(v, int)}}"

    def text(self) -> str:
        a, s, lst = self.pick("int"), self.pick("str"), self.pick("list")
        new = self.new("str")
        expr = self.rng.choice(
            [
                f"f'{{{s}}}-{{{a}:04d}}'",
                f"'{{}}/{{}}'.format({s}, len({lst}))",
                f"'%s:%d' % ({s}, {a})",
            ]
        )
        return f"{new} = {expr}\nprint({new}.upper())"

    def imports(self) -> str:
        mod = self.rng.choice(MODULES)
        return f"import {mod}\nprint({mod}.__name__)"

    def klass(self) -> str:
        a = self.pick("int")
        obj = f"acc_{self.n}"
        self.n += 1
        head = "" if self.has_class else CLASS
        self.has_class = True
        new = self.new("int")
        return f"{head}{obj} = Accumulator({a})\n{obj}.add({a} + 1).add(2)\n{new} = {obj}.total()"


def make_notebook(code_cells: int, seed: int = 0) -> nbformat.NotebookNode:
    """A deterministic notebook of `code_cells` code cells, with a markdown cell every ~5."""
    gen = _Gen(seed)
    sources = gen.first_cells()
    while len(sources) < code_cells:
        sources.append(gen.cell())
    cells = []
    for index, source in enumerate(sources[:code_cells]):
        if index % 5 == 0:
            cells.append(new_markdown_cell(f"## Section {index // 5}\nSome prose.", id=f"m{index}"))
        cells.append(new_code_cell(source, id=f"c{index}"))
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nb


def check_runs(nb: nbformat.NotebookNode) -> None:
    """Execute the cells in order in one namespace: the synthetic notebook must be valid."""
    namespace: dict[str, object] = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in nb.cells:
            if cell.cell_type == "code":
                exec(compile(cell.source, "<cell>", "exec"), namespace)


def best_of(repeats: int, func: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best


def chain_notebook(code_cells: int) -> nbformat.NotebookNode:
    """The deepest step graph: every cell reads and rebinds the previous cell's `x`."""
    cells = [
        new_code_cell("x = 0" if i == 0 else "x = x + 1", id=f"c{i}") for i in range(code_cells)
    ]
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nb


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="sizes 10 and 100, best of 2")
    args = parser.parse_args()
    sizes = [10, 100] if args.quick else [10, 100, 1000]
    repeats = 2 if args.quick else 3
    tmp = tempfile.mkdtemp(prefix="nb2cwl-bench-")

    def write(nb: nbformat.NotebookNode, name: str) -> str:
        nbformat.write(nb, os.path.join(tmp, name))
        return os.path.join(tmp, name)

    compile_notebook(write(make_notebook(10, seed=1), "warm-up.ipynb"))  # loads astroid brains
    rows: dict[int, dict[str, float]] = {}
    for size in sizes:
        nb = make_notebook(size)
        check_runs(nb)
        path = write(nb, f"synthetic_{size}.ipynb")
        sources = [c.source for c in nb.cells if c.cell_type == "code"]
        rows[size] = {
            "ast.parse": best_of(repeats, lambda s=sources: [ast.parse(x) for x in s]),
            "analysis": best_of(
                repeats, lambda p=path: build_dataflow(analyse_notebook(read_notebook(p)))
            ),
            "compile_notebook": best_of(repeats, lambda p=path: compile_notebook(p)),
        }
    print(f"best of {repeats}; seconds (ms per code cell)")
    print(f"{'cells':>6} " + " ".join(f"{k:>24}" for k in rows[sizes[0]]))
    for size, row in rows.items():
        print(
            f"{size:>6} " + " ".join(f"{t:>13.4f} ({1000 * t / size:6.2f})" for t in row.values())
        )
    for a, b in itertools.pairwise(sizes):
        ratios = "  ".join(f"{k} {rows[b][k] / rows[a][k]:.1f}x" for k in rows[a])
        print(f"growth t({b})/t({a}): {ratios}")
    big, before = sizes[-1], sizes[-2]
    verdicts = []
    for key in ("analysis", "compile_notebook"):
        verdicts.append((f"{key}, {big} cells: {rows[big][key]:.3f} s < 5 s", rows[big][key] < 5))
        growth = rows[big][key] / rows[before][key]
        verdicts.append((f"{key}, growth t({big})/t({before}) = {growth:.1f} <= 15", growth <= 15))
    chain = write(chain_notebook(big), f"chain_{big}.ipynb")
    print(
        f"linear chain of {big} cells (x = x + 1): compile_notebook "
        f"{best_of(1, lambda: compile_notebook(chain)):.3f} s"
    )
    nb2cwl = os.path.join(os.path.dirname(sys.executable), "nb2cwl")
    start = time.perf_counter()
    done = subprocess.run(
        [nb2cwl, "explain", "--json", os.path.join(tmp, f"synthetic_{big}.ipynb")],
        capture_output=True,
        text=True,
    )
    print(
        f"nb2cwl explain --json, {big} cells, end to end (subprocess): "
        f"{time.perf_counter() - start:.2f} s (exit {done.returncode}, "
        f"{len(done.stdout)} bytes)"
    )
    if done.returncode:
        print(done.stderr.strip()[-2000:])
    for text, ok in verdicts:
        print(f"{'PASS' if ok else 'FAIL'}: {text}")
    print(f"notebooks kept in {tmp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
