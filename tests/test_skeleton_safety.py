"""Loops that look independent but are not, and scattered loops whose gather must be exact.

Each case here was a silently wrong workflow (or a failure where Jupyter runs) found by an
adversarial review: the loop was scattered and its outputs differed from Jupyter's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from equivalence import run_with_nbclient, run_with_workflow
from explained import skeleton_lines
from test_cli import notebook

from nb2cwl.cli import main

WORK = "def f(x):\n    return x * 3 + 1\nxs = list(range(1, 12))"

#: (label, cells after WORK, words the fallback reason of the last cell must contain)
STAYS_SEQUENTIAL = [
    ("next() on a shared iterator", ["it = iter('abcdefghijk')",
                                    "r = [f(x) + ord(next(it)) for x in xs]"], ("iterator",)),
    ("an iterator as the collection", ["it = iter(xs)", "r = [f(v) for v in it]"],
     ("iterator",)),
    ("one iterator zipped with itself", ["it = iter(xs)",
                                         "r = [f(a) + b for a, b in zip(it, it)]"],
     ("iterator",)),
    ("an iterator as the inner collection", ["it = iter([10, 20, 30])",
                                             "r = [f(x) + y for x in xs for y in it]"],
     ("iterator",)),
    ("a lazy map() that prints", ["def noisy(v):\n    print('gen', v)\n    return v",
                                  "ys = []\nfor v in map(noisy, xs):\n    ys.append(f(v))"],
     ("item by item",)),
    ("a generator inside enumerate()", ["zs = []\nfor i, v in enumerate(x for x in xs):\n"
                                        "    zs.append(f(v))"], ("item by item",)),
    ("a reducer argument that runs code first",
     ["import functools\ndef pick():\n    print('pick')\n    return lambda a, b: a - b",
      "r = functools.reduce(pick(), [f(x) for x in xs])"], ("argument of",)),
    ("numpy's ufunc.at", ["import numpy as np\nhist = np.zeros(3, dtype=int)",
                          "ys = []\nfor x in xs:\n    np.add.at(hist, x % 3, 1)\n"
                          "    ys.append(f(x))"], ("modifies hist",)),
    ("numpy's out=", ["import numpy as np\nacc = np.zeros(2)",
                      "ys = []\nfor x in xs:\n    np.add(acc, x, out=acc)\n    ys.append(f(x))"],
     ("modifies acc",)),
    ("print(file=...)", ["import io\nbuf = io.StringIO()",
                         "ys = []\nfor x in xs:\n    print(x, file=buf)\n    ys.append(f(x))"],
     ("modifies buf",)),
    ("a function filling its default value",
     ["def work(x, cache={}):\n    cache[x] = x\n    return len(cache)",
      "r = [work(x) for x in xs]"], ("default value of cache",)),
    ("a closure held in a variable",
     ["def make():\n    n = [0]\n    def step(x):\n        n[0] += 1\n        return x + n[0]\n"
      "    return step\ng = make()", "r = [g(x) for x in xs]"], ("callable value",)),
    ("a cached function", ["import functools\n@functools.lru_cache(maxsize=None)\n"
                           "def cached(x):\n    return f(x)", "r = [cached(x) for x in xs]"],
     ("lru_cache",)),
    ("a decorator of the notebook's own",
     ["calls = []\ndef counted(fn):\n    def wrapper(*a):\n        calls.append(a)\n"
      "        return fn(*a)\n    return wrapper\n@counted\ndef work(x):\n    return f(x)",
      "r = [work(x) for x in xs]"], ("decorated with counted",)),
    ("a collection the loop appends to",
     ["out = []\nqueue = [1]\nfor n in queue:\n    out.append(f(n))\n    if n < 20:\n"
      "        queue.append(n * 2)"], ("collection reads queue",)),
    ("a called function reading the accumulator",
     ["def work(x):\n    return x * 100 + len(results)",
      "results = []\nfor x in xs:\n    results.append(work(x))"], ("reads results",)),
    ("map() over a method of a notebook object",
     ["class Acc:\n    def __init__(self):\n        self.n = 0\n    def feed(self, x):\n"
      "        self.n += 1\n        return f(x) + self.n\nacc = Acc()",
      "r = list(map(acc.feed, xs))"], ("method of a notebook object",)),
    ("Counter.subtract", ["from collections import Counter\nc = Counter()",
                          "ys = []\nfor x in xs:\n    ys.append(f(x))\n    c.subtract([x % 2])"],
     ("modifies c",)),
    ("module state set in a called function",
     ["import os\ndef work(x):\n    os.environ['LAST'] = str(x)\n    return f(x)",
      "r = [work(x) for x in xs]"], ("module os",)),
    ("numpy print options", ["import numpy as np",
                             "ys = []\nfor x in xs:\n    np.set_printoptions(precision=2)\n"
                             "    ys.append(f(x))"], ("set_printoptions",)),
    ("a warning (shown once per place)",
     ["import warnings\ndef work(x):\n    warnings.warn('odd')\n    return f(x)",
      "r = [work(x) for x in xs]"], ("module warnings",)),
    ("map() over a closure held in a variable",
     ["def make():\n    n = [0]\n    def step(x):\n        n[0] += 1\n        return x + n[0]\n"
      "    return step\ng = make()", "r = list(map(g, xs))"], ("callable value",)),
    ("a default filled after *args",
     ["def h(*vals, seen=[]):\n    seen.append(1)\n    return f(vals[0]) + len(seen)",
      "r = [h(x + 1) for x in xs]"], ("default value of seen",)),
    # not an accumulation: a loop run for what it changes, which is not even a candidate
    ("update() with keywords", ["d = {}", "for x in xs:\n    d.update(last=f(x))"], ()),
    ("a library nb2cwl does not know", ["import mylib_unknown",
                                        "r = [mylib_unknown.process(x) for x in xs]"],
     ("no knowledge of",)),
    ("TensorFlow objects per item", ["import tensorflow as tf",
                                     "r = [float(tf.reduce_sum(tf.ones(x))) for x in xs]"],
     ("does not scatter yet", "on a GPU claim all its memory")),
    ("a TensorFlow variable made before the loop",
     ["import tensorflow as tf\ntotal = tf.Variable(0.0)",
      "r = [float(total.assign_add(f(x))) for x in xs]"],
     ("uses total, made before the loop (tensorflow)", "cannot be saved")),
    ("figures drawn per item", ["import matplotlib.pyplot as plt",
                                "figs = []\nfor x in xs:\n    figs.append(plt.figure())\n"
                                "    plt.plot([f(x)])"], ("figures",)),
    ("an object whose __iter__ runs code",
     ["class Items:\n    def __iter__(self):\n        for x in range(5):\n"
      "            print('giving', x)\n            yield x\nitems = Items()",
      "r = [f(v) for v in items]"], ("__iter__",)),
    ("an object sharing the accumulator, read in the loop",
     ["class Run:\n    def __init__(self, losses):\n        self.losses = losses",
      "losses = []\nrun = Run(losses)\nfor x in xs:\n    losses.append(f(x) + len(run.losses))"],
     ("shares its object with losses",)),
    ("callables taken from a list",
     ["hits = []\nhandlers = [lambda x: hits.append(x) or f(x), lambda x: f(x) + 1]",
      "r = [h(3) for h in handlers]"], ("modifies",)),
    # a dict of a library's functions: calling one is calling the library, which draws
    ("NumPy's drawing functions in a dict",
     ["import numpy as np\nnp.random.seed(0)\nsamplers = {'u': np.random.rand, "
      "'n': np.random.randn}",
      "r = {}\nfor name, draw in samplers.items():\n    r[name] = f(float(draw(3).sum()))"],
     ("global random generator",)),
    ("unseeded model classes in a dict",
     ["from sklearn.tree import DecisionTreeClassifier\n"
      "from sklearn.linear_model import LogisticRegression\nimport numpy as np\n"
      "X = np.arange(20.).reshape(10, 2)\ny = np.arange(10) % 2\n"
      "classes = {'lr': LogisticRegression, 'tree': DecisionTreeClassifier}",
      "r = {}\nfor name, cls in classes.items():\n    r[name] = cls().fit(X, y).score(X, y)"],
     ("line 3: an iteration draws from NumPy's global random generator",)),
    # loops that gather nothing but change what all items share: the hazard and its line
    ("a notebook function changing its argument",
     ["base = {}\ndef add_col(frame, k):\n    frame[k] = f(k)",
      "for k in range(8):\n    add_col(base, k)"],
     ("line 2: an iteration modifies base, which all iterations share",)),
    ("the best so far",
     ["best_score, best_x = -1, None\nfor x in xs:\n    sc = f(x) % 5\n"
      "    if sc > best_score:\n        best_score, best_x = sc, x"],
     ("line 4: best_score is written in one iteration and read in a later one",)),
    ("a change to an item a copy shares with the collection's item",
     ["rows = [[[x]] for x in xs]",
      "out = []\nfor r in rows:\n    c = r.copy()\n    c[0].append(f(1))\n"
      "    out.append(len(c[0]))"],
     ("line 4: an iteration modifies rows",)),
    ("a DummyClassifier's score", ["from sklearn.dummy import DummyClassifier\n"
                                   "import numpy as np\nnp.random.seed(0)\n"
                                   "X = np.arange(40).reshape(20, 2)\ny = np.arange(20) % 2\n"
                                   "dummy = DummyClassifier(strategy='stratified').fit(X, y)",
                                   "scores = []\nfor n in [10, 20]:\n"
                                   "    scores.append(dummy.score(X[:n], y[:n]) + f(n))"],
     ("line 3: an iteration draws from NumPy's global random generator",)),
    ("model classes handed to a function",
     ["from sklearn.ensemble import RandomForestClassifier, ExtraTreesClassifier\n"
      "import numpy as np\nX = np.arange(40.).reshape(20, 2)\ny = np.arange(20) % 2\n"
      "models = {'rf': RandomForestClassifier, 'et': ExtraTreesClassifier}\n"
      "def run(cls):\n    return cls(n_estimators=3).fit(X, y).score(X, y)",
      "for name, cls in models.items():\n    print(name, run(cls))"],
     ("line 2: an iteration draws from NumPy's global random generator",)),
    ("model classes whose dict changed",
     ["from sklearn.linear_model import LogisticRegression\nimport numpy as np\n"
      "from sklearn.tree import DecisionTreeClassifier\n"
      "X = np.arange(20.).reshape(10, 2)\ny = np.arange(10) % 2\n"
      "classes = {'lr': LogisticRegression}", "classes['tree'] = DecisionTreeClassifier",
      "r = {}\nfor name, cls in classes.items():\n    r[name] = cls().fit(X, y).score(X, y)"],
     ()),
]


#: Safe loops that the checks above must not keep sequential (cells after WORK).
STILL_SCATTERED = [
    ("a None default replaced inside",
     ["def work(x, cfg=None):\n    if cfg is None:\n        cfg = {}\n    cfg['k'] = 2\n"
      "    return f(x) + cfg['k']", "r = [work(x) for x in xs]"]),
    ("next() of a fresh iterator", ["ds = [{x: 1} for x in xs]",
                                    "r = [f(next(iter(d))) for d in ds]"]),
    ("sorted() of a lazy map", ["words = ['b', 'A', 'a', 'c']",
                                "out = []\nfor w in sorted(set(map(str.lower, words))):\n"
                                "    out.append(f(len(w)))"]),
    ("a loop variable named like an earlier iterator", ["e = enumerate(xs)",
                                                         "r = [f(e) for e in xs]"]),
    ("an accumulator a closure holds", ["def make(l):\n    return lambda: len(l)",
                                        "losses = []\ncount = make(losses)",
                                        "for x in xs:\n    losses.append(f(x))"]),
    ("a store into a copy of the item", ["rows = [[x] for x in xs]",
                                         "out = []\nfor r in rows:\n    c = r.copy()\n"
                                         "    c.append(f(r[0]))\n    c[0] = 0\n"
                                         "    out.append(sum(c))"]),
]


@pytest.mark.parametrize("label, cells", STILL_SCATTERED, ids=[c[0] for c in STILL_SCATTERED])
def test_safe_loops_still_scatter(label: str, cells: list[str], tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = notebook(tmp_path / "n.ipynb", [WORK, *cells], markdown_first=False)
    data = _explain(path, capsys)
    assert len(cells) in skeleton_lines(data), (
        label, data["fallbacks"])


def _explain(path: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    capsys.readouterr()
    assert main(["explain", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("label, cells, words", STAYS_SEQUENTIAL,
                         ids=[case[0] for case in STAYS_SEQUENTIAL])
def test_stays_sequential_with_the_reason(label: str, cells: list[str], words: tuple[str, ...],
                                          tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = notebook(tmp_path / "n.ipynb", [WORK, *cells], markdown_first=False)
    data = _explain(path, capsys)
    assert data["skeletons"] == [], label
    if not words:
        return
    last = len(cells)
    reasons = [f["reason"] for f in data["fallbacks"] if f["cell"] == last]
    assert reasons, f"{label}: no fallback for cell {last}: {data['fallbacks']}"
    for word in words:
        assert word in reasons[0], (label, reasons[0])


#: Scattered, with outputs that must match Jupyter's exactly (run with 3 chunks).
SCATTERED_CELLS = [
    WORK,
    # a name the cell binds before the loop and reads after it
    "import math\nk = 5\nr = [f(v) for v in xs]\nprint(r, k, math.floor(2.5))",
    # slice assignment in the body
    "out = [0] * 11\nfor i, x in enumerate(xs):\n    out[i:i + 1] = [f(x)]\nprint(out)",
    # extend() takes a lazy argument's items when called, in the item's own output
    "def noisy(v):\n    print('noisy', v)\n    return v",
    "ys = []\nfor x in xs:\n    print('item', x)\n    ys.extend(map(noisy, [f(x)]))\nprint(ys)",
    "ws = []\nfor x in xs:\n    ws.extend(f(v) for v in range(x % 3))\nprint(ws)",
    # a comprehension's variable is its own: the global of the same name keeps its value
    "x = 10\ndef work(p):\n    return p + x",
    "r = [work(x) for x in range(4)]\nprint(r)",
    "r = [work(x) + y for x in range(3) for y in [100, 200] if y > x]\nprint(r)",
    "r = sorted({work(a) * b for a, b in zip(range(4), range(4))})\nprint(r, x)",
    # two names for one list, made by a chained assignment (handed on together: the gather
    # appends to the one list)
    "ys2 = zs2 = []",
    "for v in xs:\n    ys2.append(f(v))",
    "print(zs2, ys2 is zs2)",
    # an iterator used up by a loop is used up in later cells too
    "it = iter(xs)",
    "r = [f(v) for v in it]",
    "print(list(it))",
    # a closure holding the accumulator: the gather's appends show in it
    "def make(l):\n    return lambda: len(l)\nlosses = []\ncount = make(losses)",
    "for v in xs:\n    losses.append(f(v))",
    "print(count(), losses)",
    # a loop that only prints: its items' lines come out in their order, and its names keep
    # the last item's values
    "for i, v in enumerate(xs):\n    score = f(v)\n    print(f'item {i}: {score}')\n"
    "print('last', i, score)",
]


@pytest.mark.streamflow
def test_scattered_cells_match_jupyter(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = notebook(tmp_path / "s.ipynb", SCATTERED_CELLS, markdown_first=False)
    data = _explain(path, capsys)
    scattered = set(skeleton_lines(data))
    assert scattered == {1, 2, 4, 5, 7, 8, 9, 11, 17, 19}  # not the iterator
    jupyter = run_with_nbclient(path, tmp_path / "jupyter")
    workflow, _ = run_with_workflow(path, tmp_path / "workflow", "--chunks", "3")
    assert workflow == jupyter


@pytest.mark.streamflow
def test_unhashable_item_fails_where_jupyter_does(tmp_path: Path) -> None:
    """A set comprehension fails at its first unhashable item, after that item's output."""
    path = notebook(tmp_path / "u.ipynb", [
        WORK, "def loud(v):\n    print('item', v)\n    return [v] if v == 3 else f(v)",
        "s = {loud(x) for x in xs}\nprint(s)"], markdown_first=False)
    jupyter = run_with_nbclient(path, tmp_path / "jupyter", allow_errors=True)
    workflow, _ = run_with_workflow(path, tmp_path / "workflow", "--chunks", "3",
                                    expect_failure=True)
    assert workflow == jupyter
    assert "unhashable" in workflow[2][0]


@pytest.mark.streamflow
def test_results_that_cannot_travel_fail_promptly(tmp_path: Path) -> None:
    """Generators as results: the map jobs cannot save them. With more chunks than cores, a
    job ending without its results file could leave StreamFlow waiting forever."""
    path = notebook(tmp_path / "g.ipynb", [
        WORK, "def gen(v):\n    yield v", "r = [gen(f(x)) for x in xs]\nprint(len(r))"],
        markdown_first=False)
    workflow, _ = run_with_workflow(path, tmp_path / "workflow", "--chunks", "3",
                                    expect_failure=True)
    assert "cannot pickle 'generator'" in workflow[2][0]
    assert "--no-scatter" in workflow[2][0]
