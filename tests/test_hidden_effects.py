"""Effects that happen where no call names them: a class body's statements, which run when
the class is defined, a function that touches files handed on as a value (`map(pd.read_csv,
files)`, `partial(open, mode="w")`, `reader = open`), and a callable handed to a call that
calls it (`apply(push, acc)`, `map(results.append, xs)`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_analysis import effects, flow, make_notebook

from nb2cwl.analysis.shared_objects import PANDAS_COPIES_ON_WRITE

CLASS_BODIES = [
    (["import numpy as np", "class C:\n    noise = np.random.rand(3)"], "rng", "rng:numpy"),
    (["import pandas as pd", "class C:\n    data = pd.read_csv('data.csv')"], "file_reads",
     "data.csv"),
    (["class C:\n    with open('out.txt', 'w') as fh:\n        fh.write('x')"], "file_writes",
     "out.txt"),
    (["log = []", "class C:\n    log.append('defined')"], "mutates", "log"),
    (["import types\ncfg = types.SimpleNamespace()", "class C:\n    cfg.ready = True"],
     "mutates", "cfg"),
    (["table = {}", "class C:\n    table['c'] = 1"], "mutates", "table"),
    (["log = []", "class C:\n    if True:\n        log.append(1)"], "mutates", "log"),
]


@pytest.mark.parametrize("cells, field, expected", CLASS_BODIES)
def test_a_class_body_runs_when_the_class_is_defined(tmp_path, cells, field, expected):
    df = flow(tmp_path, cells)
    assert expected in getattr(effects(df, len(cells) - 1), field)


@pytest.mark.parametrize("cells", [
    ["items = [1]", "class C:\n    items = []\n    items.append(1)"],  # the class's own
    ["log = []", "class C:\n    def add(self):\n        log.append(1)"],  # runs when called
    ["log = []", "class C:\n    handler = lambda self: log.append(1)"],
])
def test_a_class_body_changes_only_what_it_changes_now(tmp_path, cells):
    fx = effects(flow(tmp_path, cells), len(cells) - 1)
    assert not fx.mutates and not fx.rng


FUNCTION_VALUES = [
    # handed on as a value: the files it touches cannot be named
    (["import pandas as pd\nimport glob\nfiles = glob.glob('*.csv')",
      "frames = list(map(pd.read_csv, files))"], "opaque_reads"),
    (["w = open", "fh = w('out.txt', 'w')\nfh.write('x')\nfh.close()"], "opaque_io"),
    (["import functools", "writer = functools.partial(open, mode='w')",
      "with writer('o.txt') as fh:\n    fh.write('x')"], "opaque_io"),
    (["paths = ['a', 'b']", "handles = map(open, paths)", "[h.read() for h in handles]"],
     "opaque_io"),
    (["import numpy as np\nsave = np.save", "save('x.npy', [1])"], "opaque_io"),
    (["def load(p, reader=open):\n    return reader(p).read()", "t = load('z.txt')"],
     "opaque_io"),
    (["import pandas as pd\nreaders = {'csv': pd.read_csv}", "df = readers['csv']('a.csv')"],
     "opaque_io"),
    (["from concurrent.futures import ThreadPoolExecutor\nimport pandas as pd",
      "with ThreadPoolExecutor() as pool:\n    frames = list(pool.map(pd.read_csv, "
      "['a.csv']))"], "opaque_reads"),
]


@pytest.mark.parametrize("cells, field", FUNCTION_VALUES)
def test_a_file_function_handed_on_makes_the_io_unknown(tmp_path, cells, field):
    """The cell that runs it cannot be told which files it touches: never fewer files than
    the code may touch, or a step would miss one."""
    df = flow(tmp_path, cells)
    assert getattr(effects(df, len(cells) - 1), field)


def test_a_file_function_mapped_at_once_over_known_paths_names_them(tmp_path):
    df = flow(tmp_path, ["import pandas as pd\nfiles = ['a.csv', 'b.csv']",
                         "frames = list(map(pd.read_csv, files))"])
    fx = effects(df, 1)
    assert fx.file_reads == {"a.csv", "b.csv"} and not fx.opaque_reads


def test_a_file_function_kept_for_later_is_not_resolved_where_mapped(tmp_path):
    """`m = map(pd.read_csv, files)` reads nothing yet: the cell that consumes it does."""
    df = flow(tmp_path, ["import pandas as pd\nfiles = ['a.csv']",
                         "m = map(pd.read_csv, files)", "frames = list(m)"])
    assert effects(df, 2).opaque_io


APPLY = "import random\ndef apply(fn, x):\n    fn(x)\n    return len(x)"
PUSH = "def push(v):\n    v.append(1)"
HANDED = [
    # the notebook's function calls what it is given, with what it is given
    ([APPLY, "def push(v):\n    v.append(1)", "acc = []", "n = apply(push, acc)"], "acc"),
    ([APPLY, "acc = []", "n = apply(lambda v: v.append(1), acc)"], "acc"),
    ([APPLY, "acc = [[1]]", "n = apply(list.reverse, acc[0])"], "acc"),
    ([APPLY, "acc = [3, 1]", "n = apply(acc.sort, None)"], "acc"),  # a bound method's object
    ([APPLY, "import functools\ndef push(v, w):\n    v.append(w)", "acc = []",
      "n = apply(functools.partial(push, acc), 1)"], "acc"),
    # handed on again, or called through the items of a parameter
    ([APPLY, "def twice(fn, x):\n    apply(fn, x)\n    return apply(fn, x)",
      "def push(v):\n    v.append(1)", "acc = []", "n = twice(push, acc)"], "acc"),
    (["def run_all(fns, x):\n    for f in fns:\n        f(x)\n    fns[0](x)",
      "def push(v):\n    v.append(1)", "acc = []", "run_all([push], acc)"], "acc"),
    # a global handed to the callable by the function's body
    (["G = []", "def each(fn):\n    fn(G)", "def push(v):\n    v.append(1)", "each(push)"], "G"),
    # a library's higher-order functions
    (["def push(v):\n    v.append(1)", "rows = [[1], [2]]", "n = len(list(map(push, rows)))"],
     "rows"),
    (["acc = []", "n = len(list(map(acc.append, range(3))))"], "acc"),
    (["from concurrent.futures import ThreadPoolExecutor\nacc = []",
      "with ThreadPoolExecutor() as pool:\n    list(pool.map(acc.append, range(3)))"], "acc"),
    (["import heapq\nheap = []", "list(map(heapq.heappush, [heap], [1]))"], "heap"),
    # kept in a name first, in a container, chosen, unpacked, a default
    ([APPLY, PUSH, "acc = []\nf = push", "n = apply(f, acc)"], "acc"),
    (["def fire(cbs, x):\n    for cb in cbs:\n        cb(x)", PUSH,
      "acc = []\ncallbacks = [push]", "fire(callbacks, acc)"], "acc"),
    ([APPLY, PUSH, "acc = []\nops = {'push': push}", "n = apply(ops['push'], acc)"], "acc"),
    ([APPLY, PUSH, "acc = []\nargs = (push, acc)", "n = apply(*args)"], "acc"),
    ([APPLY, PUSH, "acc = []\nkw = {'fn': push, 'x': acc}", "n = apply(**kw)"], "acc"),
    ([APPLY, PUSH, "acc = []", "n = apply(push if len(acc) >= 0 else print, acc)"], "acc"),
    ([PUSH, "def apply_to(x, fn=push):\n    fn(x)", "acc = []", "apply_to(acc)"], "acc"),
    (["def run_all(fns, xs):\n    return [f(x) for f in fns for x in xs]", PUSH,
      "rows = [[1], [2]]", "n = len(run_all([push], rows))"], "rows"),
    (["class Runner:\n    def __init__(self, fn):\n        self.fn = fn\n"
      "    def run(self, x):\n        self.fn(x)", PUSH, "acc = []", "Runner(push).run(acc)"],
     "acc"),
    # what *args and **kwargs take, a nested function, a method, a callable a call returns
    (["def timed(fn, *args, **kwargs):\n    return fn(*args, **kwargs)",
      "def count(counts, word):\n    counts[word] = counts.get(word, 0) + 1", "counts = {}",
      "timed(count, counts, 'a')"], "counts"),
    (["def apply_to(fn, a):\n    def inner(z):\n        fn(z)\n    inner(a)", PUSH, "acc = []",
      "apply_to(push, acc)"], "acc"),
    (["def apply_all(fn, rows):\n    def inner(z):\n        fn(z)\n    list(map(inner, rows))",
      PUSH, "rows = [[1]]", "apply_all(push, rows)"], "rows"),
    (["class Cleaner:\n    def clean(self, row):\n        row['x'] = 0", APPLY, "row = {}",
      "n = apply(Cleaner().clean, row)"], "row"),
    (["class Prep:\n    @staticmethod\n    def clean(row):\n        row['x'] = 0", "row = {}",
      "Prep.clean(row)"], "row"),
    (["class P:\n    def __call__(self, a):\n        a.append(1)", APPLY, "acc = []\np = P()",
      "n = apply(p, acc)"], "acc"),
    ([APPLY, PUSH, "acc = []\nSTEPS = {'push': push}", "n = apply(STEPS.get('push'), acc)"],
     "acc"),
    (["acc = []", "n = len(list(map(getattr(acc, 'append'), [1])))"], "acc"),
    (["from joblib import Parallel, delayed", PUSH, "acc = []",
      "Parallel(n_jobs=1)(delayed(push)(acc) for _ in range(2))"], "acc"),
    (["import operator\nacc = {}", "operator.setitem(acc, 'k', 1)"], "acc"),
    ([APPLY, "acc = []", "n = apply(lambda z, t=acc: t.append(1), [])"], "acc"),
    # registries: filled by a call, by a decorator, walked by a function
    (["HOOKS = []", PUSH, "HOOKS.append(push)",
      "def run_hooks(a):\n    for h in HOOKS:\n        h(a)", "acc = []", "run_hooks(acc)"],
     "acc"),
    (["HOOKS = []\ndef hook(f):\n    HOOKS.append(f)\n    return f",
      "@hook\ndef push(a):\n    a.append(1)", "def run_hooks(a):\n    for h in HOOKS:\n"
      "        h(a)", "acc = []", "run_hooks(acc)"], "acc"),
    # globals the function hands through its own names
    (["ROWS = [[1], [2]]", "def each(fn):\n    for row in ROWS:\n        fn(row)", PUSH,
      "each(push)"], "ROWS"),
    (["G = []", "def each(fn):\n    x = G\n    fn(x)", PUSH, "each(push)"], "G"),
    (["acc = []\nadd = acc.append", "n = len(list(map(add, range(3))))"], "acc"),
    (["import functools\ndef push(v, w):\n    v.append(w)", "acc = []",
      "p = functools.partial(push, acc)", "n = len(list(map(p, range(3))))"], "acc"),
]


@pytest.mark.parametrize("cells, changed", HANDED)
def test_a_callable_handed_to_a_call_changes_what_it_is_called_with(tmp_path, cells, changed):
    """Before, none of these was seen: a loop around them was scattered, and each process
    changed its own copy."""
    assert changed in effects(flow(tmp_path, cells), len(cells) - 1).mutates


def test_a_class_method_changing_its_class_changes_the_class(tmp_path):
    cells = ["class S:\n    reg = []\n    @classmethod\n    def push(cls, x):\n"
             "        cls.reg.append(x)", "S.push(1)"]
    assert "S" in effects(flow(tmp_path, cells), 1).mutates


@pytest.mark.parametrize("cells, rng", [
    ([APPLY, "deck = [1, 2, 3]", "n = apply(random.shuffle, deck)"], "rng:random"),
    (["import numpy as np\nrows = [np.arange(3)]", "list(map(np.random.shuffle, rows))"],
     "rng:numpy"),
])
def test_a_drawing_function_handed_to_a_call_draws(tmp_path, cells, rng):
    fx = effects(flow(tmp_path, cells), len(cells) - 1)
    assert rng in fx.rng and fx.mutates


@pytest.mark.parametrize("cells", [
    # what is handed changes nothing it is called with
    ([APPLY, "import numpy as np\nX = np.arange(3.0)", "m = apply(np.mean, X)"]),
    ([APPLY, "def total(v):\n    return sum(v)", "X = [1, 2]", "m = apply(total, X)"]),
    ([APPLY, "X = [1, 2]", "m = apply(lambda v: v * 2, X)"]),
    (["scores = {'a': 1}", "best = max(scores, key=scores.get)"]),
    # a function that never calls what it is given
    (["def describe(fn, x):\n    return f'{fn.__name__}: {len(x)}'",
      "def push(v):\n    v.append(1)", "X = [1]", "text = describe(push, X)"]),
    # a library class the function seeds; a pure method kept in a name
    (["from sklearn.ensemble import RandomForestClassifier",
      "def make(Model, depth):\n    return Model(max_depth=depth, random_state=0)",
      "m = make(RandomForestClassifier, 3)"]),
    (["import numpy as np\nfrom sklearn.linear_model import LinearRegression\n"
      "X = np.arange(6.0).reshape(3, 2)\ny = np.arange(3.0)\n"
      "model = LinearRegression().fit(X, y)\npredict = model.predict",
      "def evaluate(fn, X):\n    return float(fn(X).sum())", "s = evaluate(predict, X)"]),
    # a callable changing only its first argument, handed copies and slices after it
    (["import numpy as np\nfrom sklearn.base import clone\n"
      "from sklearn.tree import DecisionTreeClassifier\nX = np.arange(40.0).reshape(20, 2)\n"
      "y = np.arange(20) % 2\nmodels = {'t': DecisionTreeClassifier(random_state=0)}",
      "def train(m, Xp, yp):\n    m.fit(Xp, yp)\n    return m",
      "def cross_validate(train_fn, model, X, y):\n    scores = []\n    for k in range(3):\n"
      "        m = clone(model)\n        train_fn(m, X[k::3], y[k::3])\n"
      "        scores.append(m.score(X, y))\n    return scores",
      "s = cross_validate(train, models['t'], X, y)"]),
    # a nested function's own parameter is not a global (`one(model)`)
    (["import numpy as np\nX = np.arange(6.0).reshape(3, 2)\ny = np.arange(3.0)",
      "def fit(m, X, y):\n    m.append(len(X))",
      "def sweep(train_fn, sizes):\n    def one(model):\n        return train_fn(model, X, y)\n"
      "    return [one([s]) for s in sizes]", "res = sweep(fit, [1, 2])"]),
    # data, not methods
    (["import numpy as np\nX = np.arange(3.0)\nlog = []", "print(X.shape, X.T)"]),
])
def test_a_callable_handed_on_that_changes_nothing_changes_nothing(tmp_path, cells):
    fx = effects(flow(tmp_path, cells), len(cells) - 1)
    assert not fx.mutates and not fx.rng


def test_a_handed_callable_changes_what_it_is_handed_where_it_changes_it(tmp_path):
    cells = ["def apply2(fn, a, b):\n    fn(a, b)", "def push(v, w):\n    v.append(w)",
             "acc = []\nitem = [1]", "apply2(push, acc, item)"]
    assert effects(flow(tmp_path, cells), 3).mutates == {"acc"}


@pytest.mark.skipif(not PANDAS_COPIES_ON_WRITE, reason="pandas before 3 may hand views")
def test_a_function_pandas_applies_changes_pieces_not_the_frame(tmp_path):
    cells = ["import pandas as pd\ndf = pd.DataFrame({'k': [1, 1, 2], 'a': [1.0, 2.0, 3.0]})",
             "def fix(piece):\n    piece['a'] = 0\n    return piece",
             "rows = df.apply(fix, axis=1)\ngroups = df.groupby('k').transform(fix)"]
    assert "df" not in effects(flow(tmp_path, cells), 2).mutates


PICK = "def pick(fn, x):\n    return fn(x)"


@pytest.mark.parametrize("cells", [
    [PICK, "data = [[1]]", "first = pick(lambda v: v, data)\nfirst.append(2)"],
    [PICK, "data = [[1], [2]]", "best = pick(max, data)\nbest.append(3)"],
    [PICK, "def same(v):\n    return v", "data = [1]", "got = pick(same, data)\ngot.append(2)"],
])
def test_what_a_function_returns_from_a_handed_callable_may_be_what_it_handed(tmp_path, cells):
    """`return fn(x)`: x comes back when fn returns what it is given, so a change to the
    result changes x."""
    assert "data" in effects(flow(tmp_path, cells), len(cells) - 1).mutates


CELLS = [
    "import pandas as pd\nfiles = ['part_a.csv', 'part_b.csv']\nlog = []",
    "for i, name in enumerate(files):\n    pd.DataFrame({'x': range(i + 3)}).to_csv(name, "
    "index=False)\nn = 0\nwhile n < 3_000_000:\n    n += 1",
    "frames = list(map(pd.read_csv, files))\nprint([len(f) for f in frames])",
    "class Settings:\n    log.append('settings defined')\n    size = 3",
    "m = 0\nwhile m < 3_000_000:\n    m += 1\nprint(m, log)",
]


@pytest.mark.streamflow
def test_hidden_effects_run_as_in_jupyter(tmp_path):
    """Before, the last cell ran beside the class's cell and printed `[]`: the class body's
    append was not seen."""
    from equivalence import run_with_nbclient, run_with_workflow

    source = Path(make_notebook(tmp_path, CELLS))
    ours, _ = run_with_workflow(source, tmp_path / "workflow")
    assert ours == run_with_nbclient(source, tmp_path / "kernel")
    assert ours[2] == ["stdout: [3, 4]\n"]
    assert ours[4] == ["stdout: 3000000 ['settings defined']\n"]


HANDED_CELLS = [
    "import time\ndef push(v):\n    v.append(1)\ndef apply(fn, x):\n    time.sleep(0.3)\n"
    "    fn(x)\n    return len(x)\ndef fill(row):\n    time.sleep(0.3)\n    row['x'] = 0\n"
    "    return row['k']\ndef call(fn, row):\n    return fn(row)\nfns = [fill]",
    "acc = []\nsizes = []\nfor i in range(6):\n    sizes.append(apply(push, acc))\n"
    "print(sizes, len(acc))",
    "filled = []\nfor i in range(6):\n    filled.append(call(fns[0], {'x': None, 'k': i}))\n"
    "print(filled)",
]


@pytest.mark.streamflow
def test_handed_callables_run_as_in_jupyter(tmp_path):
    """Before, the first loop was scattered and printed `[1, 2, 3, 1, 2, 3] 0`; the second,
    scattered rightly, raised NameError: its step replayed `fill` without the `import time`
    its body uses."""
    import json
    import subprocess
    import sys

    from equivalence import run_with_nbclient, run_with_workflow
    from explained import skeleton_lines

    source = Path(make_notebook(tmp_path, HANDED_CELLS))
    explained = subprocess.run([sys.executable, "-m", "nb2cwl", "explain", str(source), "--json"],
                               capture_output=True, text=True, check=True)
    assert set(skeleton_lines(json.loads(explained.stdout))) == {2}  # only the second loop
    ours, _ = run_with_workflow(source, tmp_path / "workflow")
    assert ours == run_with_nbclient(source, tmp_path / "kernel")
    assert ours[1] == ["stdout: [1, 2, 3, 4, 5, 6] 6\n"]
    assert ours[2] == ["stdout: [0, 1, 2, 3, 4, 5]\n"]
