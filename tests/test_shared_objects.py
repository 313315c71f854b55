"""Objects reachable from others, at the level of the analysis: a figure and its axes, a
closure and its list, a dict and its views, a pipeline and its estimators, a registry and the
functions a decorator put in it. A later change to one must reach the cells that read the
others (they are handed on together), or the cells stay in one step; explain says which.

The fidelity corpus (tests/fidelity/aliasing_*.ipynb) runs the same cases as workflows.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_analysis import data_inputs, effects, flow, make_notebook

from nb2cwl.api import compile_notebook
from nb2cwl.backends.step_scripts import step_spec
from nb2cwl.options import CompileOptions

PLT = "import matplotlib.pyplot as plt\n"
SKLEARN = ("from sklearn.pipeline import Pipeline, make_pipeline\n"
           "from sklearn.preprocessing import StandardScaler\n"
           "from sklearn.model_selection import GridSearchCV\n"
           "from sklearn.linear_model import LogisticRegression\n")
FRAME = "import pandas as pd\ndf = pd.DataFrame({'k': ['a', 'b'], 'v': [1, 2]})\n"

# (cells, reader, var, producer): the reader takes var from the cell that changed it
SHARED = {
    "figure and axes": ([PLT + "fig, ax = plt.subplots()", "ax.plot([1, 2])", "fig"],
                        2, "fig", 1),
    "figure and line": ([PLT + "fig, ax = plt.subplots()\nline, = ax.plot([1, 2])",
                         "line.set_color('red')", "fig"], 2, "fig", 1),
    "axes of a grid": ([PLT + "fig, (left, right) = plt.subplots(1, 2)", "right.bar([1], [2])",
                        "fig"], 2, "fig", 1),
    "current figure": ([PLT + "plt.plot([1, 2])\nax = plt.gca()\nfig = plt.gcf()",
                        "ax.set_title('t')", "fig"], 2, "fig", 1),
    "closure over an argument": (["def make(items):\n    return lambda: len(items)",
                                  "data = []\ncount = make(data)", "data.append(1)",
                                  "print(count())"], 3, "count", 2),
    "nested function returned": (["def make(values):\n    def mean():\n"
                                  "        return sum(values) / len(values)\n    return mean",
                                  "data = [1]\nmean = make(data)", "data.append(3)",
                                  "print(mean())"], 3, "mean", 2),
    "constructor call returned": (["class Box:\n    def __init__(self, items):\n"
                                   "        self.items = items\n\n"
                                   "def boxed(items):\n    return Box(items)",
                                   "data = []\nbox = boxed(data)", "data.append(1)",
                                   "print(box.items)"], 3, "box", 2),
    "pipeline keeps its estimator": ([SKLEARN + "scaler = StandardScaler()\n"
                                      "pipe = Pipeline([('s', scaler)])",
                                      "pipe.fit([[1.0], [2.0]])", "print(scaler.mean_)"],
                                     2, "scaler", 1),
    "make_pipeline keeps its estimators": ([SKLEARN + "scaler = StandardScaler()\n"
                                            "pipe = make_pipeline(scaler, LogisticRegression())",
                                            "pipe.fit([[1.0], [2.0]], [0, 1])",
                                            "print(scaler.mean_)"], 2, "scaler", 1),
    "a search keeps its estimator": ([SKLEARN + "est = LogisticRegression()\n"
                                      "search = GridSearchCV(est, {'C': [1.0]})",
                                      "est.set_params(C=2.0)", "print(search.estimator)"],
                                     2, "search", 1),
    "groupby holds its frame": ([FRAME + "g = df.groupby('k')", "df['w'] = df['v'] * 2",
                                 "g.sum()"], 2, "g", 1),
    "rolling holds its series": ([FRAME + "s = df['v'].copy()\nr = s.rolling(2)",
                                  "s.iloc[0] = 10", "r.mean()"], 2, "r", 1),
    "a Styler holds its frame": ([FRAME + "styled = df.style", "df['w'] = 1", "styled"],
                                 2, "styled", 1),
    "a Styler's format returns the Styler": ([FRAME + "styled = df.style.format('{:.1f}')",
                                              "df['w'] = 1.0", "styled"], 2, "styled", 1),
    "generator shuffle": (["import numpy as np\nrng = np.random.default_rng(0)\n"
                           "x = np.arange(5)", "rng.shuffle(x)", "x"], 2, "x", 1),
    "Random shuffle": (["import random\nr = [1, 2, 3]", "random.Random(1).shuffle(r)", "r"],
                       2, "r", 1),
    "decorator registry": (["H = {}\ndef register(name):\n    def deco(f):\n"
                            "        H[name] = f\n        return f\n    return deco",
                            "@register('one')\ndef one():\n    return 1", "print(H)"],
                           2, "H", 1),
    "subclass registry": (["class Plugin:\n    registry = {}\n"
                           "    def __init_subclass__(cls, **kw):\n"
                           "        Plugin.registry[cls.__name__] = cls",
                           "class Csv(Plugin):\n    pass", "print(Plugin.registry)"],
                          2, "Plugin", 1),
    "a function changing a global through a nested one": (
        ["G = []\ndef outer():\n    def inner():\n        G.append(1)\n    inner()",
         "outer()", "print(G)"], 2, "G", 1),
    "unpacked literals": (["class Run:\n    def __init__(self, losses):\n"
                           "        self.losses = losses",
                           "losses, accs = [], []\nrun = Run(losses)", "losses.append(1)",
                           "print(run.losses)"], 3, "run", 2),
    "SimpleNamespace": (["from types import SimpleNamespace\nlog = []\n"
                         "ns = SimpleNamespace(log=log)", "log.append(1)", "ns"], 2, "ns", 1),
    "ChainMap": (["from collections import ChainMap\ndefaults = {'lr': 0.1}\n"
                  "cfg = ChainMap({}, defaults)", "defaults['lr'] = 0.5", "cfg['lr']"],
                 2, "cfg", 1),
    "vars of an object": (["class O:\n    pass\no = O()", "vars(o)['x'] = 1", "o.x"],
                          2, "o", 1),
    "an item of a list copy": (["d = {'a': [1]}", "list(d.values())[0].append(2)", "print(d)"],
                               2, "d", 1),
    # a copy holds the same items: a change to an item changes both
    "an item changed through a copy": (["rows = [[1], [2]]\nc = rows.copy()",
                                        "c[0].append(9)", "print(rows)"], 2, "rows", 1),
    "an item changed through a copy of a copy": (["rows = [[1]]\na = rows.copy()\n"
                                                  "b = list(a)", "b[0].append(9)",
                                                  "print(rows)"], 2, "rows", 1),
    "the original's item changed": (["rows = [[1]]\nc = rows.copy()", "rows[0].append(9)",
                                     "print(c)"], 2, "c", 1),
    "a function changing its copy's items": (["def bump(rows):\n    c = rows.copy()\n"
                                              "    c[0].append(9)", "data = [[1]]",
                                              "bump(data)", "print(data)"], 3, "data", 2),
    "a library function kept in a name": (["import heapq\nheap = [5, 1]\n"
                                           "push = heapq.heappush", "push(heap, 0)",
                                           "print(heap)"], 2, "heap", 1),
    "an item of the original changed in place": (["groups = [[1, 2], [3]]",
                                                  "snapshot = groups.copy()",
                                                  "groups[0] += [10]", "print(snapshot)"],
                                                 3, "snapshot", 2),
    "an item changed through an alias of the original": (
        ["data = {'a': [1, 2]}", "snapshot = data.copy()\ncurrent = data",
         "current['a'].append(99)", "print(snapshot)"], 3, "snapshot", 2),
    # a second review: what only looks like an array's copy, and sharing through a rebound name
    "a copy of a frame's records": (["import pandas as pd\ndf = pd.DataFrame({'a': [1]})\n"
                                     "recs = df.to_dict('records')", "r = recs.copy()",
                                     "r[0]['a'] = 99", "print(recs)"], 3, "recs", 2),
    "a copy of a frame's attrs": (["import pandas as pd\ndf = pd.DataFrame({'a': [1]})\n"
                                   "df.attrs['tags'] = ['t']", "meta = df.attrs.copy()",
                                   "meta['tags'].append('new')", "print(df.attrs)"],
                                  3, "df", 2),
    "copies sharing items through a name rebound": (["a = [[1], [2]]",
                                                     "b = a.copy()\nc = list(a)", "a = None",
                                                     "b[0].append(5)", "print(c)"],
                                                    4, "c", 3),
    "a copy of an alias rebound": (["data = [[1]]\nrows = data", "snapshot = rows.copy()",
                                    "rows = []", "data[0].append(99)", "print(snapshot)"],
                                   4, "snapshot", 3),
    "the values of a dict() of a dict": (["x3 = {'a': [1]}", "for v in dict(x3).values():\n"
                                          "    v.append(9)", "print(x3)"], 2, "x3", 1),
    "a function changing its argument through two names": (
        ["def grow(p):\n    a = p\n    b = a\n    b.append(1)", "data = [[1]]", "grow(data)",
         "print(data)"], 3, "data", 2),
    "a function changing the items of a copy of an alias": (
        ["def bump(p):\n    a = p\n    b = a.copy()\n    b[0].append(1)", "data = [[1]]",
         "bump(data)", "print(data)"], 3, "data", 2),
    "a function returning its argument through two names": (
        ["def same(p):\n    a = p\n    b = a\n    return b", "data = [[1]]\nx = same(data)",
         "x.append(5)", "print(data)"], 3, "data", 2),
}


@pytest.mark.parametrize(("cells", "reader", "var", "producer"), SHARED.values(), ids=SHARED)
def test_a_change_reaches_what_shares_the_object(tmp_path, cells, reader, var, producer):
    df = flow(tmp_path, cells)
    assert (var, producer) in data_inputs(df, reader), data_inputs(df, reader)


# (cells, reader, var, producer): nothing is shared, the reader takes var where it was made
APART = {
    "split arrays are copies": (["import numpy as np\n"
                                 "from sklearn.model_selection import train_test_split\n"
                                 "X = np.ones((4, 2))\nX_train, X_test = train_test_split(X)",
                                 "X_train[0] = 5", "print(X_test)"], 2, "X_test", 0),
    "a list of keys": (["d = {'a': [1]}\nnames = list(d.keys())", "d['b'] = [2]",
                        "print(names)"], 2, "names", 0),
    "the groups of a groupby are new frames": ([FRAME + "parts = {}",
                                                "for key, part in df.groupby('k'):\n"
                                                "    parts[key] = part.copy()",
                                                "print(df)"], 2, "df", 0),
    "rows picked through .loc are a new frame": ([FRAME + "sub = df.loc[df.v > 1]",
                                                 "sub['w'] = 1", "print(df)"], 2, "df", 0),
    "a groupby's methods change nothing": ([FRAME + "g = df.groupby('k')", "g.sum()",
                                            "print(df)"], 2, "df", 0),
    "the items of a dict of numbers": (["import pandas as pd\neffects = {'a': 0.0, 'b': 3.0}"
                                        "\nframes = []\nfor group, effect in effects.items():"
                                        "\n    frames.append(pd.DataFrame({'g': group, "
                                        "'y': [effect]}))\ndf = pd.concat(frames)",
                                        "effects['c'] = 1.0", "print(df)"], 2, "df", 0),
    "the keys of a dict of strings": (["names = {'a': 'x', 'b': 'y'}\nkeys = []\n"
                                       "for k in names:\n    keys.append(k)",
                                       "names['c'] = 'z'", "print(keys)"], 2, "keys", 0),
    "a string split": (["line = 'a=1'", "key, value = line.split('=')\nkeys = [key]",
                        "keys.append('b')", "print(line)"], 3, "line", 0),
    # a frame's copy shares nothing: a store into it leaves the original as it was
    "a new column of a frame's copy": ([FRAME + "d = df.copy()", "d['w'] = 1\n"
                                        "d.loc[0, 'v'] = 7", "print(df)"], 2, "df", 0),
    "a new column of an assigned frame": ([FRAME + "d = df.assign(w=1)", "d['z'] = 2",
                                           "print(df)"], 2, "df", 0),
    "a copy rebound": (["rows = [[1]]\nc = rows.copy()", "c = [[5]]\nc[0].append(1)",
                        "print(rows)"], 2, "rows", 0),
    "a function adding to its copy": (["def extended(rows):\n    c = list(rows)\n"
                                       "    c.append([3])\n    return len(c)", "data = [[1]]",
                                       "n = extended(data)", "print(data)"], 3, "data", 1),
}


@pytest.mark.parametrize(("cells", "reader", "var", "producer"), APART.values(), ids=APART)
def test_what_shares_nothing_stays_apart(tmp_path, cells, reader, var, producer):
    df = flow(tmp_path, cells)
    assert (var, producer) in data_inputs(df, reader), data_inputs(df, reader)


def test_a_builtin_is_nobodys_alias(tmp_path):
    df = flow(tmp_path, ["from collections import defaultdict\nindex = defaultdict(list)",
                         "index['a'].append(1)", "x = list('ab')"])
    assert "list" not in effects(df, 1).mutates
    assert data_inputs(df, 2) == set()


# --- kept together: what no pickle can carry -------------------------------------------

KEPT = {
    "a dict's keys": (["d = {}\nnames = d.keys()", "d['a'] = 1", "print(list(names))",
                       "print('other')"], (0, 2), "live view of the dict d"),
    "a dict's items": (["d = {}\npairs = d.items()", "d['a'] = 1", "print(list(pairs))"],
                       (0, 2), "live view of the dict d"),
    "np.split views": (["import numpy as np\na = np.arange(6.0)\nparts = np.split(a, 2)",
                        "a[:] = 0", "print(parts[0])"], (0, 2), "view of the array a"),
    "a weak reference": (["import weakref\nclass O:\n    pass\no = O()\nw = weakref.ref(o)",
                          "o.x = 1", "print(w().x)"], (0, 2), "weak references"),
}


@pytest.mark.parametrize(("cells", "span", "why"), KEPT.values(), ids=KEPT)
def test_what_cannot_be_saved_together_keeps_the_cells_together(tmp_path, cells, span, why):
    df = flow(tmp_path, cells)
    assert [(k.first, k.last) for k in df.together] == [span]
    assert any(why in line for line in df.together[0].describe())


def test_a_view_of_a_dict_never_changed_keeps_nothing_together(tmp_path):
    df = flow(tmp_path, ["d = {'a': 1}\nnames = d.keys()", "print(list(names))"])
    assert df.together == []


# --- what explain says ---------------------------------------------------------------------

def test_explain_says_why_unpacked_parts_travel_together(tmp_path):
    df = flow(tmp_path, [PLT + "fig, ax = plt.subplots()", "ax.plot([1])", "fig"])
    assert any("fig, ax are unpacked from one result of plt.subplots()" in note
               for _, note in effects(df, 0).notes)
    assert frozenset({"fig", "ax"}) in df.cell(1).analysis.alias_groups


def test_a_registering_decorator_makes_the_function_a_value(tmp_path):
    df = flow(tmp_path, ["H = {}\ndef register(name):\n    def deco(f):\n"
                         "        H[name] = f\n        return f\n    return deco",
                         "@register('one')\ndef one():\n    return 1", "print(one())"])
    cell = df.cell(1).analysis
    assert "one" not in cell.definitions and not cell.definition_only
    assert any("defining one changes H" in note for _, note in cell.effects.notes)
    assert ("one", 1) in data_inputs(df, 2)


def test_a_plain_decorator_keeps_the_function_a_definition(tmp_path):
    df = flow(tmp_path, ["import functools\ndef logged(f):\n    @functools.wraps(f)\n"
                         "    def wrapper(*a):\n        return f(*a)\n    return wrapper",
                         "@logged\ndef one():\n    return 1", "print(one())"])
    assert "one" in df.cell(1).analysis.definitions


def test_a_class_made_with_its_instances_is_pickled_by_name(tmp_path):
    path = make_notebook(tmp_path, [
        "import enum\nclass Split(enum.Enum):\n    TRAIN = 'train'\ncurrent = Split.TRAIN",
        "print(current is Split.TRAIN)"])
    workflow = compile_notebook(path, CompileOptions(granularity="cell"))
    first = next(s for s in workflow.steps if s.cells[0].index == 0)
    assert any("Split" in d["names"] for d in step_spec(workflow, first)["definitions"])


def test_explain_says_what_a_library_object_keeps(tmp_path):
    df = flow(tmp_path, [SKLEARN + "scaler = StandardScaler()\n"
                                   "pipe = Pipeline([('s', scaler)])", "pipe.fit([[1.0]])"])
    assert any("pipe may hold scaler (what Pipeline() keeps or returns)" in note
               for _, note in effects(df, 0).notes)


def test_the_example_plot_needs_nothing_of_the_loop_over_a_dict_of_numbers(tmp_path):
    """notebooks/example.ipynb builds its frame in `for group, effect in effects.items()`
    (a dict of numbers): the plot cell that reads the frame needs neither `effect` nor
    `effects` (issue 26: "the plot step needs effect, effects, names it never reads")."""
    import nbformat

    from nb2cwl.analysis.dataflow import build_dataflow
    from nb2cwl.analysis.program import analyse_notebook
    from nb2cwl.frontend.reader import read_notebook

    source = Path(__file__).resolve().parent.parent / "notebooks" / "example.ipynb"
    df = build_dataflow(analyse_notebook(read_notebook(str(source))))
    plot = next(i for i, c in enumerate(nbformat.read(source, 4).cells)
                if "plt.subplots" in c.source)
    needed = {var for var, _ in data_inputs(df, plot)}
    assert "df" in needed and not needed & {"effect", "effects"}, needed


DICT_OF_NUMBERS = [
    "%matplotlib inline\nimport matplotlib.pyplot as plt\nimport numpy as np\nimport pandas as pd",
    "rng = np.random.default_rng(1)\neffects = {'control': 0.0, 'a': 3.0, 'b': -2.0}\n"
    "frames = []\nfor group, effect in effects.items():\n"
    "    x = rng.uniform(0, 10, 20)\n"
    "    frames.append(pd.DataFrame({'group': group, 'x': x, 'y': 2 * x + effect}))\n"
    "df = pd.concat(frames, ignore_index=True)\ndf.groupby('group')['y'].mean().round(3)",
    "effects['c'] = 9.0\nprint(sorted(effects), group, effect)",
    "fig, ax = plt.subplots()\nfor group, sub in df.groupby('group'):\n"
    "    ax.scatter(sub['x'], sub['y'], label=group)\nax.legend()\nprint(len(df), group)",
    "print(df.shape, round(float(df['y'].sum()), 3), sorted(effects))",
]


@pytest.mark.streamflow
@pytest.mark.parametrize("granularity", ["auto", "cell"])
def test_a_loop_over_a_dict_of_numbers_gives_what_the_kernel_gives(tmp_path, granularity):
    """The dict-of-numbers rule on a notebook written as data scientists write it (pandas,
    matplotlib, a magic), each cell's outputs compared with nbclient's: the frame no longer
    travels with `effect` and `effects`, and a later change to the dict reaches what reads
    it."""
    from equivalence import run_with_nbclient, run_with_workflow

    path = Path(make_notebook(tmp_path, DICT_OF_NUMBERS))
    jupyter = run_with_nbclient(path, tmp_path / "kernel")
    workflow, _ = run_with_workflow(path, tmp_path / "wf", "--granularity", granularity)
    assert workflow == jupyter


#: Copies holding the same items as their originals, each cell a step of its own: a change to
#: an item must show in both, as in Jupyter (found by a review of the copy rule).
COPIES = ["import numpy as np\ngroups = [[1, 2], [3]]\ndata = {'a': [1, 2]}\n"
          "weights = {'a': np.zeros(3)}",
          "snapshot = groups.copy()\nkept = data.copy()\ncurrent = data\n"
          "initial = dict(weights)",
          "groups[0] += [10]\ncurrent['a'].append(99)\nweights['a'] += 5",
          "print(snapshot, kept, initial['a'])"]


@pytest.mark.streamflow
def test_items_a_copy_shares_stay_shared_across_steps(tmp_path):
    from equivalence import run_with_nbclient, run_with_workflow

    source = Path(make_notebook(tmp_path, COPIES))
    ours, _ = run_with_workflow(source, tmp_path / "workflow", "--granularity", "cell")
    assert ours == run_with_nbclient(source, tmp_path / "kernel")
    assert ours[3] == ["stdout: [[1, 2, 10], [3]] {'a': [1, 2, 99]} [5. 5. 5.]\n"]
