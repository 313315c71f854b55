"""The hazard audit's notebooks: for every kind of reason nb2cwl gives to keep a loop
sequential, a loop where that hazard really changes a result when the items run in separate
processes, in another order (tests/test_hazard_audit.py).

Run as a script (`python hazard_demos.py KIND`) it prints, as JSON, what the demo's probe
shows after the cell ran as written, and after its loop ran as a scatter would run it:
each item in a process of its own (forked from the state before the loop, in a folder of
its own, the last item first), the accumulations gathered back in the items' order, then
the rest of the cell. A comprehension's items are computed so, and the statement holding it
runs with the gathered list.
"""

from __future__ import annotations

import ast
import json
import os
import pickle
import sys
import tempfile
from dataclasses import dataclass


@dataclass(frozen=True)
class Demo:
    setup: str  # a cell before the loop's
    cell: str  # the loop's cell
    probe: str  # an expression whose value differs
    files: dict[str, str] | None = None  # files beside the notebook (a module of its own)


DEMOS: dict[str, Demo] = {
    "global_rng": Demo("import numpy as np\nrng = np.random.default_rng(0)",
                       "draws = []\nfor i in range(3):\n    draws.append(float(rng.random()))",
                       "draws"),
    "shared_mutation": Demo("pool = list(range(6))",
                            "sizes = []\nfor i in range(3):\n    pool.pop()\n"
                            "    sizes.append(len(pool))", "(sizes, pool)"),
    "global_rebind": Demo("calls = 0\ndef bump(x):\n    global calls\n    calls += 1\n"
                          "    return x * calls",
                          "bumped = []\nfor x in range(3):\n    bumped.append(bump(x))",
                          "(bumped, calls)"),
    "loop_carried": Demo("rate = 0.5",
                         "w = 1.0\ntrace = []\nfor step in range(3):\n    w = w * rate\n"
                         "    trace.append(w)", "trace"),
    "accumulator_read": Demo("values = [3, 1, 4]",
                             "running = []\nfor v in values:\n"
                             "    running.append(v + sum(running))", "running"),
    "collection_grows": Demo("limit = 20",
                             "queue = [1]\nfor x in queue:\n    if x < limit:\n"
                             "        queue.append(x * 3)", "queue"),
    "early_exit": Demo("def score(x):\n    return x * x",
                       "seen = []\nfor x in range(6):\n    if score(x) == 9:\n        break\n"
                       "    seen.append(x)", "seen"),
    "short_circuit": Demo("values = [0, 1, 2, 3]",
                          "found = any(1 / (2 - x) > 0.4 for x in values)", "found"),
    "file_writes": Demo("import os",
                        "names = []\nfor i in range(3):\n"
                        "    with open(f'part{i}.txt', 'w') as handle:\n"
                        "        handle.write(str(i))\n    names.append(i)",
                        "sorted(n for n in os.listdir('.') if n.startswith('part'))"),
    "figures": Demo("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt",
                    "peaks = []\nfor k in range(3):\n    plt.figure()\n"
                    "    peaks.append(k)", "len(plt.get_fignums())"),
    "module_state": Demo("import numpy as np",
                         "shown = []\nfor digits in [2, 3]:\n"
                         "    np.set_printoptions(precision=digits)\n    shown.append(digits)",
                         "repr(np.array([1 / 3]))"),
    "process_state": Demo("import tally",
                          "counts = []\nfor i in range(3):\n    counts.append(tally.add())",
                          "(counts, tally.count)",
                          {"tally.py": "count = 0\n\ndef add():\n    global count\n"
                                       "    count += 1\n    return count\n"}),
    "uncarried_values": Demo("import tensorflow as tf\ntotal = tf.Variable(0.0)",
                             "adds = []\nfor i in range(3):\n"
                             "    adds.append(float(total.assign_add(1.0)))",
                             "(adds, float(total.numpy()))"),
    "shared_results": Demo("rows = [[1], [2]]",
                           "kept = []\nfor row in rows:\n    kept.append(row)\n"
                           "rows[0].append(99)", "kept"),
    "shared_iterator": Demo("stream = iter(range(10))",
                            "taken = []\nfor i in range(3):\n    taken.append(next(stream))",
                            "taken"),
    "lazy_collection": Demo("events = []\ndef produce(n):\n    for i in range(n):\n"
                            "        events.append(i)\n        yield i",
                            "seen_at = []\nfor x in produce(3):\n"
                            "    seen_at.append((x, len(events)))", "seen_at"),
    "iterating_class": Demo("events = []\nclass Stream:\n    def __iter__(self):\n"
                            "        for i in range(3):\n            events.append(i)\n"
                            "            yield i\nstream_obj = Stream()",
                            "seen_at = []\nfor x in stream_obj:\n"
                            "    seen_at.append((x, len(events)))", "seen_at"),
    "callable_value": Demo("def make_counter():\n    n = [0]\n    def inc(x):\n"
                           "        n[0] += 1\n        return x + n[0]\n    return inc\n"
                           "inc = make_counter()",
                           "incs = []\nfor x in range(3):\n    incs.append(inc(x))", "incs"),
    "mutable_default": Demo("def remember(x, seen=[]):\n    seen.append(x)\n"
                            "    return len(seen)",
                            "lengths = []\nfor x in range(3):\n    lengths.append(remember(x))",
                            "lengths"),
    "stateful_decorator": Demo("from functools import lru_cache\n@lru_cache(maxsize=None)\n"
                               "def square(n):\n    return n * n",
                               "squares = []\nfor n in [2, 2, 2]:\n"
                               "    squares.append(square(n))",
                               "square.cache_info().hits"),
    "notebook_method": Demo("class Counter:\n    def __init__(self):\n        self.n = 0\n"
                            "    def step(self, x):\n        self.n += 1\n"
                            "        return x * self.n\ncounter = Counter()",
                            "stepped = list(map(counter.step, range(3)))", "stepped"),
    "reducer_argument": Demo("import functools\nevents = []\ndef make_combiner():\n"
                             "    events.append('combiner')\n    return lambda a, b: a + b\n"
                             "def work(x):\n    return x * 10 + len(events)",
                             "total = functools.reduce(make_combiner(), "
                             "[work(x) for x in range(3)])", "total"),
}


def _accumulators(body: list[ast.stmt]) -> list[str]:
    found: list[str] = []
    for node in (n for stmt in body for n in ast.walk(stmt)):
        name = None
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("append", "extend", "update")
                and isinstance(node.func.value, ast.Name)):
            name = node.func.value.id
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript):
            name = getattr(node.targets[0].value, "id", None)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            name = node.target.id
        if name and name not in found:
            found.append(name)
    return found


def _empty(value: object) -> object:
    return type(value)() if isinstance(value, (list, dict, set)) else 0


def _combine(whole: object, part: object) -> object:
    if isinstance(whole, list):
        return whole + part
    if isinstance(whole, dict):
        return {**whole, **part}
    if isinstance(whole, set):
        return whole | part
    return whole + part


def _in_processes(items: list, run) -> list:
    """`run(item)` for each item in a process of its own, in a folder of its own, the last
    item first; the results in the items' order (an exception raised is returned)."""
    results = []
    for item in reversed(items):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            os.chdir(tempfile.mkdtemp())
            try:
                outcome = ("value", run(item))
            except Exception as exc:  # the demo shows it
                outcome = ("error", f"{type(exc).__name__}: {exc}")
            with os.fdopen(write, "wb") as handle:
                pickle.dump(outcome, handle)
            os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as handle:
            outcome = pickle.load(handle)
        os.waitpid(pid, 0)
        if outcome[0] == "error":
            raise RuntimeError(outcome[1])
        results.append(outcome[1])
    return list(reversed(results))


def _scattered(demo: Demo, ns: dict) -> None:
    tree = ast.parse(demo.cell)
    position = next(i for i, s in enumerate(tree.body) if isinstance(s, ast.For)
                    or any(isinstance(n, (ast.ListComp, ast.GeneratorExp, ast.Call))
                           and _items_of(n) is not None for n in ast.walk(s)))
    statement = tree.body[position]
    exec(compile(ast.Module(tree.body[:position], []), "<cell>", "exec"), ns)
    if isinstance(statement, ast.For):
        items = list(eval(compile(ast.Expression(statement.iter), "<cell>", "eval"), ns))
        names = [n for n in _accumulators(statement.body) if n in ns]
        loop = ast.Module([ast.For(statement.target, ast.Name("__items__", ast.Load()),
                                   statement.body, [])], [])
        code = compile(ast.fix_missing_locations(loop), "<cell>", "exec")

        def run(item):
            for name in names:
                ns[name] = _empty(ns[name])
            ns["__items__"] = [item]
            exec(code, ns)
            return {name: ns[name] for name in names}

        for part in _in_processes(items, run):
            for name in names:
                ns[name] = _combine(ns[name], part[name])
    else:
        node = next(n for n in ast.walk(statement) if _items_of(n) is not None)
        source, element = _items_of(node)
        items = list(eval(compile(ast.Expression(source), "<cell>", "eval"), ns))
        element_code = compile(ast.fix_missing_locations(ast.Expression(element)), "<cell>",
                               "eval")

        def run(item):
            ns["__item__"] = item
            return eval(element_code, ns)

        ns["__gathered__"] = _in_processes(items, run)
        gathered = _Replace(node).visit(statement)
        exec(compile(ast.fix_missing_locations(ast.Module([gathered], [])), "<cell>",
                     "exec"), ns)
    exec(compile(ast.Module(tree.body[position + 1:], []), "<cell>", "exec"), ns)


def _items_of(node: ast.AST) -> tuple[ast.expr, ast.expr] | None:
    """(collection, per-item expression of `__item__`) of a one-loop comprehension or of
    `map(f, xs)`."""
    if isinstance(node, (ast.ListComp, ast.GeneratorExp)) and len(node.generators) == 1:
        generator = node.generators[0]
        bind = ast.Lambda(ast.arguments([], [ast.arg("__target__")], None, [], [], None, []),
                          node.elt)
        # (lambda target: element)(item), with the comprehension's target as the parameter
        bind.args.args[0].arg = generator.target.id
        call = ast.Call(bind, [ast.Name("__item__", ast.Load())], [])
        return generator.iter, call
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "map" and len(node.args) == 2):
        return node.args[1], ast.Call(node.args[0], [ast.Name("__item__", ast.Load())], [])
    return None


class _Replace(ast.NodeTransformer):
    def __init__(self, target: ast.AST) -> None:
        self.target = target

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if node is self.target:
            return ast.Name("__gathered__", ast.Load())
        return super().generic_visit(node)


def outcomes(kind: str) -> dict[str, str]:
    """What the probe shows after the cell as written, and after it ran scattered (each in
    a process of its own: modules keep state, pyplot its figures)."""
    return {way: _in_processes([way], lambda way: _outcome(DEMOS[kind], way))[0]
            for way in ("sequential", "scattered")}


def _outcome(demo: Demo, way: str) -> str:
    for name, text in (demo.files or {}).items():
        with open(name, "w", encoding="utf-8") as handle:
            handle.write(text)
    sys.path.insert(0, os.getcwd())
    ns: dict = {}
    exec(demo.setup, ns)
    try:
        if way == "sequential":
            exec(demo.cell, ns)
        else:
            _scattered(demo, ns)
        return repr(eval(demo.probe, ns))
    except Exception as exc:  # a failure is a different result
        return f"raised {type(exc).__name__}: {exc}"


if __name__ == "__main__":
    print(json.dumps(outcomes(sys.argv[1])))
