"""Unit tests of the analysis: per-cell effects and the cell-level dataflow built from them."""

from __future__ import annotations

import nbformat
import pytest

from nb2cwl.analysis.dataflow import ANY_FILE, Dataflow, build_dataflow
from nb2cwl.analysis.program import analyse_notebook
from nb2cwl.errors import DirectiveError
from nb2cwl.frontend.reader import read_notebook

KERNELSPEC = {"name": "python3", "language": "python", "display_name": "Python 3"}


def make_notebook(tmp_path, cells, markdown_first=False):
    """Write a notebook of `cells` (code strings or nbformat cells); return its path."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    items = [nbformat.v4.new_markdown_cell("# Title")] if markdown_first else []
    for cell in cells:
        items.append(nbformat.v4.new_code_cell(cell) if isinstance(cell, str) else cell)
    nb.cells = items
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, str(path))
    return str(path)


def flow(tmp_path, cells, markdown_first=False) -> Dataflow:
    """The dataflow of a notebook made of `cells`."""
    path = make_notebook(tmp_path, cells, markdown_first)
    return build_dataflow(analyse_notebook(read_notebook(path)))


def inputs(df: Dataflow, index: int) -> set[tuple[str, int | None]]:
    """The inputs of cell `index` as {(var, producer)}."""
    return {(i.var, i.producer) for i in df.cell(index).inputs}


def data_inputs(df: Dataflow, index: int) -> set[tuple[str, int | None]]:
    """The inputs of cell `index` that are notebook variables (no rng: or file: state)."""
    return {(v, p) for v, p in inputs(df, index) if ":" not in v}


def effects(df: Dataflow, index: int):
    """The Effects of cell `index`."""
    return df.cell(index).analysis.effects


def replayed(df: Dataflow, index: int) -> set[str]:
    """The names the definitions replayed in cell `index` bind."""
    return {name for d in df.cell(index).replay for name in d.names}


def replayed_from(df: Dataflow, index: int) -> set[tuple[str, int]]:
    """{(name, defining cell)} of the definitions replayed in cell `index`."""
    return {(name, d.cell_index) for d in df.cell(index).replay for name in d.names}


def producer_of(df: Dataflow, index: int, var: str) -> int | None:
    """The producer of `var` in cell `index`'s inputs (KeyError when it is no input)."""
    found = {p for v, p in inputs(df, index) if v == var}
    if not found:
        raise KeyError(var)
    (producer,) = found
    return producer


def diagnostics(df: Dataflow, code: str):
    """The diagnostics with `code`."""
    return [d for d in df.diagnostics if d.code == code]


# --- names read, written, deleted ----------------------------------------------------------


def test_reads_and_writes(tmp_path):
    df = flow(tmp_path, ["x = 1\ny = 2", "z = x + 1", "print(y, z)"])
    assert effects(df, 0).writes == {"x", "y"}
    assert effects(df, 0).reads == set()
    assert {"x"} <= effects(df, 1).reads
    assert effects(df, 1).writes == {"z"}
    assert inputs(df, 0) == set()
    assert inputs(df, 1) == {("x", 0)}
    assert inputs(df, 2) == {("y", 0), ("z", 1)}
    assert df.cell(0).outputs == {"x", "y"}
    assert df.cell(1).outputs == {"z"}
    assert df.cell(2).outputs == set()


def test_name_written_before_read_in_the_same_cell_is_not_an_input(tmp_path):
    df = flow(tmp_path, ["x = 1", "x = 5\nprint(x)"])
    assert "x" not in effects(df, 1).reads
    assert inputs(df, 1) == set()
    assert df.cell(0).outputs == set()


def test_read_comes_from_the_last_writer(tmp_path):
    df = flow(tmp_path, ["x = 1", "x = 2", "y = 0", "print(x)"])
    assert inputs(df, 3) == {("x", 1)}


def test_producer_indices_count_markdown_cells(tmp_path):
    df = flow(tmp_path, ["x = 1", "print(x)"], markdown_first=True)
    assert [c.index for c in df.cells] == [1, 2]
    assert inputs(df, 2) == {("x", 1)}


def test_undefined_name_is_missing(tmp_path):
    df = flow(tmp_path, ["print(undefined_thing)"])
    assert df.cell(0).missing == ["undefined_thing"]
    assert inputs(df, 0) == set()


def test_builtins_are_not_missing_or_inputs(tmp_path):
    df = flow(tmp_path, ["print(len([1]), sorted({2}), range(3))"])
    assert df.cell(0).missing == []
    assert inputs(df, 0) == set()


def test_del_reads_and_deletes(tmp_path):
    df = flow(tmp_path, ["x = 1\ny = 2", "del x", "print(y)"])
    fx = effects(df, 1)
    assert "x" in fx.reads
    assert fx.deletes == {"x"}
    assert "x" not in fx.writes
    assert inputs(df, 1) == {("x", 0)}


def test_read_after_delete_has_no_producer(tmp_path):
    df = flow(tmp_path, ["x = 1", "del x", "print(x)"])
    assert "x" in effects(df, 2).reads
    assert all(var != "x" for var, _ in inputs(df, 2))


def test_delete_then_rebind_in_a_later_cell(tmp_path):
    df = flow(tmp_path, ["x = 1", "del x", "x = 3", "print(x)"])
    assert inputs(df, 3) == {("x", 2)}


def test_comprehension_variables_are_local(tmp_path):
    df = flow(tmp_path, ["i = 10\ndata = [1, 2]", "squares = [i * i for i in data]"])
    assert inputs(df, 1) == {("data", 0)}


# --- functions: globals, late binding ------------------------------------------------------


def test_global_written_by_a_function_called_later(tmp_path):
    df = flow(tmp_path, ["def setup():\n    global g\n    g = 5", "setup()", "print(g)"])
    assert "g" not in effects(df, 0).writes
    assert "g" in effects(df, 1).writes
    assert inputs(df, 2) == {("g", 1)}


def test_global_augmented_in_a_function(tmp_path):
    df = flow(tmp_path, ["x = 5", "def bump():\n    global x\n    x += 1", "bump()", "print(x)"])
    assert ("x", 0) in inputs(df, 2)
    assert "x" in effects(df, 2).writes
    assert inputs(df, 3) == {("x", 2)}


def test_function_call_reads_the_globals_its_body_reads(tmp_path):
    df = flow(tmp_path, ["def f():\n    return base * 2", "base = 10", "y = f()"])
    assert "base" not in effects(df, 0).reads
    assert "base" in effects(df, 2).reads
    assert data_inputs(df, 2) == {("base", 1)}
    assert replayed_from(df, 2) == {("f", 0)}


def test_function_reads_are_transitive_through_user_functions(tmp_path):
    cells = [
        "def g():\n    return base + 1",
        "def f():\n    return g() * 2",
        "base = 10",
        "print(f())",
    ]
    df = flow(tmp_path, cells)
    assert {"base", "f", "g"} <= effects(df, 3).reads
    assert data_inputs(df, 3) == {("base", 2)}
    assert replayed_from(df, 3) == {("f", 1), ("g", 0)}


def test_function_locals_and_parameters_are_not_reads(tmp_path):
    df = flow(tmp_path, ["a = 1\nb = 2", "def f(a):\n    b = a + 1\n    return b", "f(3)"])
    assert data_inputs(df, 2) == set()


def test_late_binding_uses_the_value_at_call_time(tmp_path):
    cells = ["def f():\n    return scale * 2", "scale = 1", "scale = 2", "print(f())"]
    df = flow(tmp_path, cells)
    assert producer_of(df, 3, "scale") == 2
    assert data_inputs(df, 3) == {("scale", 2)}


def test_lambda_assigned_to_a_name_is_late_bound(tmp_path):
    df = flow(tmp_path, ["f = lambda: k + 1", "k = 3", "print(f())"])
    assert ("k", 1) in inputs(df, 2)


# --- definitions replayed rather than shipped -----------------------------------------------


def test_imports_are_replayed_not_inputs(tmp_path):
    cells = [
        "import os\nimport numpy as np\nimport os.path\nfrom math import sqrt as root",
        "print(os.sep, np.pi, root(4.0))",
    ]
    df = flow(tmp_path, cells)
    assert df.cell(0).analysis.definition_only
    assert inputs(df, 1) == set()
    assert df.cell(0).outputs == set()
    assert {"os", "np", "root"} <= replayed(df, 1)
    assert all(d.cell_index == 0 for d in df.cell(1).replay)


def test_replay_is_limited_to_what_the_cell_uses(tmp_path):
    df = flow(tmp_path, ["import os\nimport json", "print(os.sep)"])
    assert replayed(df, 1) == {"os"}


def test_star_import_is_replayed_for_names_defined_nowhere(tmp_path):
    df = flow(tmp_path, ["from os.path import *", "print(join('a', 'b'))", "x = 1"])
    assert df.cell(0).analysis.definition_only
    assert len(df.cell(1).replay) == 1
    assert df.cell(1).replay[0].star
    assert df.cell(1).replay[0].cell_index == 0
    assert inputs(df, 1) == set()
    assert df.cell(2).replay == []


def test_star_import_is_replayed_where_it_may_rebind_a_builtin(tmp_path):
    df = flow(tmp_path, ["from numpy import *", "print(round(2.5))",
                         "def half(v):\n    return v / 2", "y = half(3)"])
    assert [d.star for d in df.cell(1).replay] == [True]  # numpy's round, not the builtin
    assert [d.star for d in df.cell(3).replay] == [True, False]  # half may call one too


def test_functions_and_classes_are_replayed_not_inputs(tmp_path):
    cells = [
        "import math",
        "def area(r):\n    return math.pi * r * r\n\nclass Circle:\n    def __init__(self, r):"
        "\n        self.r = r",
        "c = Circle(2)\nprint(area(c.r))",
    ]
    df = flow(tmp_path, cells)
    assert df.cell(1).analysis.definition_only
    assert inputs(df, 2) == set()
    assert replayed_from(df, 2) == {("area", 1), ("Circle", 1), ("math", 0)}
    assert df.cell(1).outputs == set()


def test_replay_order_follows_the_notebook(tmp_path):
    df = flow(tmp_path, ["import math", "def f():\n    return math.pi", "print(f())"])
    assert [d.names for d in df.cell(2).replay] == [("math",), ("f",)]


def test_decorator_and_default_from_definitions_stay_replayable(tmp_path):
    cells = ["def deco(fn):\n    return fn", "@deco\ndef f(n=len('ab')):\n    return n", "f()"]
    df = flow(tmp_path, cells)
    assert df.cell(1).analysis.definition_only
    assert inputs(df, 2) == set()
    assert replayed_from(df, 2) == {("deco", 0), ("f", 1)}


def test_default_argument_from_data_is_not_replayable(tmp_path):
    df = flow(tmp_path, ["k = 3", "def f(a=k):\n    return a", "print(f())"])
    assert not df.cell(1).analysis.definition_only
    assert inputs(df, 1) == {("k", 0)}
    assert inputs(df, 2) == {("f", 1)}
    assert "f" not in replayed(df, 2)


def test_decorator_from_data_is_not_replayable(tmp_path):
    cells = ["registry = []", "@registry.append\ndef f():\n    return 1", "print(registry)"]
    df = flow(tmp_path, cells)
    assert not df.cell(1).analysis.definition_only
    assert ("registry", 0) in inputs(df, 1)
    assert "f" not in replayed(df, 2)


def test_decorator_bound_to_a_lambda_is_not_replayable(tmp_path):
    df = flow(tmp_path, ["dec = lambda fn: fn", "@dec\ndef f():\n    return 1", "print(f())"])
    assert inputs(df, 2) == {("f", 1)}
    assert "f" not in replayed(df, 2)


def test_class_with_a_data_base_is_not_replayable(tmp_path):
    df = flow(tmp_path, ["Base = type('Base', (), {})", "class C(Base):\n    pass", "C()"])
    assert inputs(df, 1) == {("Base", 0)}
    assert inputs(df, 2) == {("C", 1)}


def test_redefined_import_as_data_is_an_input(tmp_path):
    df = flow(tmp_path, ["import math", "math = 3", "print(math)"])
    assert inputs(df, 2) == {("math", 1)}
    assert df.cell(2).replay == []


def test_cell_mixing_definitions_and_data_is_not_definition_only(tmp_path):
    df = flow(tmp_path, ["import math\nx = math.pi", "print(x, math.e)"])
    assert not df.cell(0).analysis.definition_only
    assert inputs(df, 1) == {("x", 0)}
    assert replayed(df, 1) == {"math"}


# --- mutation ------------------------------------------------------------------------------


PANDAS_FRAME = "import pandas as pd\ndf = pd.DataFrame({'a': [1]})"


@pytest.mark.parametrize(
    ("setup", "mutation", "var"),
    [
        ("x = 1", "x += 1", "x"),
        ("d = {}", "d['a'] = 1", "d"),
        ("d = {'a': [1]}", "d['a'][0] = 2", "d"),
        ("class O:\n    pass\no = O()", "o.attr = 1", "o"),
        ("lst = [1]", "lst.append(2)", "lst"),
        ("lst = [1]", "lst.extend([2, 3])", "lst"),
        ("lst = [3, 1]", "lst.sort()", "lst"),
        ("d = {}", "d.update(a=1)", "d"),
        ("s = set()", "s.add(3)", "s"),
        ("d = {'a': 1}", "del d['a']", "d"),
        ("lst = [1, 2]", "import random\nrandom.shuffle(lst)", "lst"),
        (PANDAS_FRAME, "df.drop(columns=['a'], inplace=True)", "df"),
        (PANDAS_FRAME, "df['b'] = df['a'] * 2", "df"),
        ("import numpy as np\na = np.zeros(3)", "a[0] = 1", "a"),
        ("import numpy as np\na = np.zeros(3)", "a.fill(2)", "a"),
    ],
)
def test_mutation_makes_the_cell_the_producer(tmp_path, setup, mutation, var):
    df = flow(tmp_path, [setup, mutation, f"print({var})"])
    assert var in effects(df, 1).mutates
    assert (var, 0) in inputs(df, 1)
    assert producer_of(df, 2, var) == 1
    assert var in df.cell(1).outputs


def test_method_on_unknown_type_is_a_possible_mutation(tmp_path):
    cells = ["import mylib\nobj = mylib.make()", "obj.frob()", "print(obj)"]
    df = flow(tmp_path, cells)
    assert "obj" in effects(df, 1).mutates
    assert inputs(df, 1) == {("obj", 0)}
    assert inputs(df, 2) == {("obj", 1)}


def test_method_on_an_object_of_a_user_class_is_a_possible_mutation(tmp_path):
    cells = ["class C:\n    def set(self, v):\n        self.v = v", "c = C()", "c.set(3)", "c"]
    df = flow(tmp_path, cells)
    assert "c" in effects(df, 2).mutates
    assert inputs(df, 3) == {("c", 2)}


def test_view_or_item_of_a_value_is_handed_on_with_it(tmp_path):
    # v is d's own inner list and r a view of a: a later cell needing both must get them
    # from one producer, or they would be two objects
    df = flow(tmp_path, ["d = {'a': [1]}", "v = d.get('a')", "v.append(2)\nprint(d)"])
    assert inputs(df, 2) == {("d", 1), ("v", 1)}
    df = flow(tmp_path, ["import numpy as np\na = np.zeros(4)", "r = a.reshape(2, 2)",
                         "r[0, 0] = 1\nprint(a)"])
    assert inputs(df, 2) == {("a", 1), ("r", 1)}


@pytest.mark.parametrize(
    ("setup", "call", "var"),
    [
        ("lst = [1, 2, 1]", "n = lst.count(1)", "lst"),
        ("lst = [1, 2, 1]", "n = lst.index(2)", "lst"),
        ("s = 'a,b'", "parts = s.split(',')", "s"),
        ("import numpy as np\na = np.array([1, 2])", "t = a.sum()", "a"),
        (PANDAS_FRAME, "d2 = df.drop(columns=['a'])", "df"),
        (PANDAS_FRAME, "d2 = df.drop(columns=['a'], inplace=False)", "df"),
    ],
)
def test_non_mutating_method_on_known_type(tmp_path, setup, call, var):
    df = flow(tmp_path, [setup, call, f"print({var})"])
    assert var not in effects(df, 1).mutates
    assert producer_of(df, 2, var) == 0
    assert var not in df.cell(1).outputs


def test_method_on_a_fresh_array_mutates_nothing(tmp_path):
    df = flow(tmp_path, ["import numpy as np", "t = np.array([1, 2]).sum()", "print(t)"])
    assert effects(df, 1).mutates == set()
    assert inputs(df, 1) == set()
    assert inputs(df, 2) == {("t", 1)}


def test_module_function_call_mutates_nothing(tmp_path):
    df = flow(tmp_path, ["import json", "s = json.dumps({'a': 1})", "print(s)"])
    assert effects(df, 1).mutates == set()
    assert "json" not in {v for v, _ in inputs(df, 2)}


def test_mutation_in_the_defining_cell_is_not_a_separate_input(tmp_path):
    df = flow(tmp_path, ["lst = []\nlst.append(1)", "print(lst)"])
    assert "lst" not in effects(df, 0).reads
    assert inputs(df, 0) == set()
    assert inputs(df, 1) == {("lst", 0)}


def test_function_mutating_a_global(tmp_path):
    cells = ["x = [1]", "def f():\n    x.append(2)", "f()", "print(x)"]
    df = flow(tmp_path, cells)
    assert "x" in effects(df, 2).mutates
    assert inputs(df, 2) == {("x", 0)}
    assert inputs(df, 3) == {("x", 2)}


# --- aliases -------------------------------------------------------------------------------


def test_mutation_through_an_alias(tmp_path):
    df = flow(tmp_path, ["a = [1]", "b = a", "b.append(2)", "print(a)"])
    assert {"a", "b"} <= effects(df, 2).mutates
    assert inputs(df, 3) == {("a", 2)}


def test_mutation_through_an_alias_in_the_same_cell(tmp_path):
    df = flow(tmp_path, ["a = [1]", "b = a\nb.append(2)", "print(a)"])
    assert "a" in effects(df, 1).mutates
    assert inputs(df, 2) == {("a", 1)}


def test_mutation_of_a_container_element_alias(tmp_path):
    df = flow(tmp_path, ["inner = [1]\nouter = [inner]", "inner.append(2)", "print(outer)"])
    assert "outer" in effects(df, 1).mutates
    assert inputs(df, 2) == {("outer", 1)}


def test_mutation_of_a_loop_element_mutates_the_container(tmp_path):
    df = flow(tmp_path, ["rows = [[1], [2]]", "for row in rows:\n    row.append(0)", "print(rows)"])
    assert "rows" in effects(df, 1).mutates
    assert inputs(df, 2) == {("rows", 1)}


def test_rebinding_breaks_the_alias(tmp_path):
    df = flow(tmp_path, ["a = [1]", "b = a", "a = [5]", "b.append(2)", "print(a, b)"])
    assert effects(df, 3).mutates == {"b"}
    assert inputs(df, 4) == {("a", 2), ("b", 3)}


def test_deep_copy_is_not_an_alias(tmp_path):
    df = flow(tmp_path, ["import copy\na = [1]", "b = copy.deepcopy(a)", "b.append(2)", "print(a)"])
    assert "a" not in effects(df, 2).mutates
    assert inputs(df, 3) == {("a", 0)}


def test_shallow_copy_shares_elements_so_counts_as_alias(tmp_path):
    # list(d.values()) holds d's own lists: changing one element changes d
    df = flow(tmp_path, ['d = {"a": [1]}', "vals = list(d.values())", "vals[0].append(2)",
                         "print(d)"])
    assert "d" in effects(df, 2).mutates
    assert inputs(df, 3) == {("d", 2)}


def test_method_results_and_loop_targets_alias_their_container(tmp_path):
    df = flow(tmp_path, ['d = {"a": [1]}', "for k, v in d.items():\n    v.append(0)", "print(d)"])
    assert inputs(df, 2) == {("d", 1)}
    df = flow(tmp_path, ['d = {"a": [1]}', 'item = d.get("a")\nitem.append(2)', "print(d)"])
    assert inputs(df, 2) == {("d", 1)}


# --- mutation through user functions -------------------------------------------------------


def test_function_mutating_its_parameter_mutates_the_argument(tmp_path):
    cells = ["def f(x):\n    x.append(1)", "lst = []", "f(lst)", "print(lst)"]
    df = flow(tmp_path, cells)
    assert "lst" in effects(df, 2).mutates
    assert data_inputs(df, 2) == {("lst", 1)}
    assert inputs(df, 3) == {("lst", 2)}


def test_function_mutating_its_parameter_through_a_local_alias(tmp_path):
    cells = ["def f(x):\n    y = x\n    y.append(1)", "lst = []", "f(lst)", "print(lst)"]
    df = flow(tmp_path, cells)
    assert inputs(df, 3) == {("lst", 2)}


def test_function_mutating_a_keyword_argument(tmp_path):
    cells = ["def f(a, b):\n    b['k'] = a", "d = {}", "f(1, b=d)", "print(d)"]
    df = flow(tmp_path, cells)
    assert "d" in effects(df, 2).mutates
    assert inputs(df, 3) == {("d", 2)}


def test_function_not_mutating_its_parameter(tmp_path):
    cells = ["def f(x):\n    return len(x)", "lst = []", "n = f(lst)", "print(lst)"]
    df = flow(tmp_path, cells)
    assert "lst" not in effects(df, 2).mutates
    assert inputs(df, 3) == {("lst", 1)}


def test_only_the_mutated_parameter_is_mutated(tmp_path):
    cells = ["def f(a, b):\n    b.append(len(a))", "p = []\nq = []", "f(p, q)", "print(p, q)"]
    df = flow(tmp_path, cells)
    assert "q" in effects(df, 2).mutates
    assert "p" not in effects(df, 2).mutates
    assert inputs(df, 3) == {("p", 1), ("q", 2)}


# --- hidden state: random number generators ------------------------------------------------


def test_random_module_state_is_chained(tmp_path):
    cells = ["import random", "a = random.random()", "random.seed(1)", "b = random.randint(0, 3)"]
    df = flow(tmp_path, cells)
    assert effects(df, 0).rng == set()
    assert effects(df, 1).rng == {"rng:random"}
    assert ("rng:random", 1) not in inputs(df, 1)
    assert "rng:random" not in {v for v, _ in inputs(df, 1)}
    assert producer_of(df, 2, "rng:random") == 1
    assert producer_of(df, 3, "rng:random") == 2
    assert "rng:random" in df.cell(1).outputs
    assert "rng:random" in df.cell(2).outputs


def test_numpy_global_generator_is_chained(tmp_path):
    cells = [
        "import numpy as np",
        "np.random.seed(0)",
        "a = np.random.rand(3)",
        "x = 1",
        "b = np.random.normal()",
    ]
    df = flow(tmp_path, cells)
    assert effects(df, 1).rng == {"rng:numpy"}
    assert producer_of(df, 2, "rng:numpy") == 1
    assert effects(df, 3).rng == set()
    assert producer_of(df, 4, "rng:numpy") == 2


def test_from_import_of_a_random_function(tmp_path):
    df = flow(
        tmp_path,
        ["from random import random as rnd\nfrom random import seed", "seed(1)", "x = rnd()"],
    )
    assert effects(df, 1).rng == {"rng:random"}
    assert producer_of(df, 2, "rng:random") == 1


def test_python_and_numpy_generators_are_separate(tmp_path):
    cells = [
        "import random\nimport numpy as np",
        "random.seed(0)",
        "np.random.seed(0)",
        "a = random.random()\nb = np.random.rand()",
    ]
    df = flow(tmp_path, cells)
    assert effects(df, 3).rng == {"rng:random", "rng:numpy"}
    assert producer_of(df, 3, "rng:random") == 1
    assert producer_of(df, 3, "rng:numpy") == 2


def test_default_rng_does_not_touch_the_global_generator(tmp_path):
    cells = [
        "import numpy as np",
        "np.random.seed(0)",
        "rng = np.random.default_rng(1)",
        "b = rng.random()",
        "c = np.random.default_rng(2).normal()",
        "d = np.random.rand()",
    ]
    df = flow(tmp_path, cells)
    for index in (2, 3, 4):
        assert effects(df, index).rng == set()
        assert "rng:numpy" not in {v for v, _ in inputs(df, index)}
    assert inputs(df, 3) == {("rng", 2)}
    assert producer_of(df, 5, "rng:numpy") == 1


def test_random_instance_does_not_touch_the_global_generator(tmp_path):
    df = flow(tmp_path, ["import random", "r = random.Random(4)", "v = r.random()"])
    assert effects(df, 1).rng == set()
    assert effects(df, 2).rng == set()


def test_function_using_the_global_generator_joins_the_chain(tmp_path):
    cells = [
        "import numpy as np\ndef noise():\n    return np.random.rand()",
        "np.random.seed(0)",
        "x = noise()",
        "y = np.random.rand()",
    ]
    df = flow(tmp_path, cells)
    assert effects(df, 0).rng == set()
    assert df.cell(0).analysis.definition_only
    assert effects(df, 2).rng == {"rng:numpy"}
    assert producer_of(df, 2, "rng:numpy") == 1
    assert producer_of(df, 3, "rng:numpy") == 2


# --- files ---------------------------------------------------------------------------------


def test_file_written_then_read(tmp_path):
    cells = [
        "with open('out.txt', 'w') as fh:\n    fh.write('hi')",
        "print(open('out.txt').read())",
    ]
    df = flow(tmp_path, cells)
    assert effects(df, 0).file_writes == {"out.txt"}
    assert effects(df, 1).file_reads == {"out.txt"}
    assert inputs(df, 1) == {("file:out.txt", 0)}
    assert "file:out.txt" in df.cell(0).outputs


@pytest.mark.parametrize(
    ("setup", "write", "read", "path"),
    [
        ("import numpy as np", "np.save('a.npy', np.zeros(3))", "x = np.load('a.npy')", "a.npy"),
        (
            "import numpy as np",
            "np.savetxt(fname='a.txt', X=np.zeros(3))",
            "x = np.loadtxt('a.txt')",
            "a.txt",
        ),
        (
            PANDAS_FRAME,
            "df.to_csv('t.csv')",
            "y = pd.read_csv('t.csv')",
            "t.csv",
        ),
        (
            PANDAS_FRAME,
            "df.to_parquet('t.parquet')",
            "y = pd.read_parquet('t.parquet')",
            "t.parquet",
        ),
        (
            "import matplotlib.pyplot as plt",
            "plt.plot([1, 2])\nplt.savefig('fig.png')",
            "z = plt.imread('fig.png')",
            "fig.png",
        ),
        (
            "import matplotlib.pyplot as plt",
            "fig = plt.figure()\nfig.savefig('fig.png')",
            "z = plt.imread('fig.png')",
            "fig.png",
        ),
        (
            "import pathlib",
            "pathlib.Path('n.txt').write_text('1')",
            "t = pathlib.Path('n.txt').read_text()",
            "n.txt",
        ),
        (
            "import os",
            "open('sub/x.txt', 'w').write('1')",
            "print(open(os.path.join('sub', 'x.txt')).read())",
            "sub/x.txt",
        ),
        ("x = 1", "%%writefile notes.txt\nhello", "print(open('./notes.txt').read())", "notes.txt"),
    ],
)
def test_library_file_writes_feed_later_readers(tmp_path, setup, write, read, path):
    df = flow(tmp_path, [setup, write, "pass", read])
    assert path in effects(df, 1).file_writes
    assert producer_of(df, 3, f"file:{path}") == 1
    assert f"file:{path}" in df.cell(1).outputs


def test_append_mode_reads_and_writes(tmp_path):
    cells = [
        "open('log.txt', 'w').write('a')",
        "open('log.txt', 'a').write('b')",
        "print(open('log.txt').read())",
    ]
    df = flow(tmp_path, cells)
    assert "log.txt" in effects(df, 1).file_reads
    assert "log.txt" in effects(df, 1).file_writes
    assert inputs(df, 1) == {("file:log.txt", 0)}
    assert inputs(df, 2) == {("file:log.txt", 1)}


def test_path_in_a_string_variable_is_resolved(tmp_path):
    cells = [
        "path = 'data.txt'",
        "with open(path, 'w') as fh:\n    fh.write('1')",
        "text = open(path).read()",
    ]
    df = flow(tmp_path, cells)
    assert effects(df, 1).file_writes == {"data.txt"}
    assert effects(df, 2).file_reads == {"data.txt"}
    assert inputs(df, 2) == {("file:data.txt", 1), ("path", 0)}


def test_path_built_from_string_parts_is_resolved(tmp_path):
    cells = [
        "folder = 'results'",
        "open(f'{folder}/run.txt', 'w').write('1')",
        "print(open(folder + '/' + 'run.txt').read())",
    ]
    df = flow(tmp_path, cells)
    assert effects(df, 1).file_writes == {"results/run.txt"}
    assert producer_of(df, 2, "file:results/run.txt") == 1


def test_unresolvable_path_is_opaque_io_ordered_after_every_writer(tmp_path):
    cells = [
        "open('a.txt', 'w').write('1')",
        "import numpy as np\nnp.save('b.npy', np.zeros(2))",
        "name = input()\nopen(name, 'w').write('x')",
        "print(open('a.txt').read())",
        "print(open('c.txt').read())",
    ]
    df = flow(tmp_path, cells)
    fx = effects(df, 2)
    assert fx.opaque_io
    assert all(line == 2 for line, _ in fx.opaque_io)
    assert fx.file_writes == set()
    # the opaque cell runs after every earlier writer
    assert {("file:a.txt", 0), ("file:b.npy", 1)} <= inputs(df, 2)
    # a later reader of a known file is ordered after the opaque cell as well
    assert {("file:a.txt", 0), (ANY_FILE, 2)} <= inputs(df, 3)
    # so is a reader of a file nobody is known to write
    assert (ANY_FILE, 2) in inputs(df, 4)
    assert ANY_FILE in df.cell(2).outputs


def test_known_write_after_an_opaque_cell_wins(tmp_path):
    cells = [
        "name = input()\nopen(name, 'w').write('x')",
        "open('a.txt', 'w').write('1')",
        "print(open('a.txt').read())",
    ]
    df = flow(tmp_path, cells)
    assert inputs(df, 2) == {("file:a.txt", 1)}


@pytest.mark.parametrize(
    "code",
    [
        "import os\nos.system('touch b.txt')",
        "import subprocess\nsubprocess.run(['touch', 'b.txt'])",
        "!touch b.txt",
        "%%bash\ntouch b.txt",
    ],
)
def test_shell_and_directory_calls_are_opaque_io(tmp_path, code):
    df = flow(tmp_path, ["open('a.txt', 'w').write('1')", code, "print(open('b.txt').read())"])
    assert effects(df, 1).opaque_io
    assert ("file:a.txt", 0) in inputs(df, 1)
    assert (ANY_FILE, 1) in inputs(df, 2)


def test_directory_listing_sees_earlier_files_without_ordering_later_readers(tmp_path):
    df = flow(tmp_path, ["open('a.txt', 'w').write('1')", "import glob\nfiles = glob.glob('*.txt')",
                         "print(open('a.txt').read())"])
    assert effects(df, 1).opaque_reads and not effects(df, 1).opaque_io
    assert ("file:a.txt", 0) in inputs(df, 1)
    assert inputs(df, 2) == {("file:a.txt", 0)}


def test_glob_pattern_stages_the_folder_beside_the_notebook(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "one.csv").write_text("a\n1\n")
    df = flow(tmp_path, ["import glob\nfiles = sorted(glob.glob('data/*.csv'))", "print(files)"])
    assert ("file:data", None) in inputs(df, 0)
    assert df.external_files == {"data": "Directory"}
    assert [d.code for d in df.diagnostics if d.code == "unresolved-io"]


def test_shell_capture_writes_its_variable(tmp_path):
    df = flow(tmp_path, ["files = !ls", "print(files)"])
    assert "files" in effects(df, 0).writes
    assert effects(df, 0).opaque_io
    assert data_inputs(df, 1) == {("files", 0)}


def test_existing_file_beside_the_notebook_is_an_external_input(tmp_path):
    (tmp_path / "data.csv").write_text("a\n1\n")
    (tmp_path / "images").mkdir()
    cells = [
        "import pandas as pd\ndf = pd.read_csv('data.csv')",
        "import os\nprint(os.path.exists('images/'))",
    ]
    df = flow(tmp_path, cells)
    assert effects(df, 0).file_reads == {"data.csv"}
    assert ("file:data.csv", None) in inputs(df, 0)
    assert df.external_files["data.csv"] == "File"
    assert ("file:images", None) in inputs(df, 1)
    assert df.external_files["images"] == "Directory"


def test_missing_file_nobody_writes_is_no_input(tmp_path):
    df = flow(tmp_path, ["import pandas as pd\ndf = pd.read_csv('nowhere.csv')"])
    assert effects(df, 0).file_reads == {"nowhere.csv"}
    assert inputs(df, 0) == set()
    assert df.external_files == {}


def test_file_written_by_the_notebook_is_not_external(tmp_path):
    (tmp_path / "data.csv").write_text("a\n1\n")
    cells = ["open('data.csv', 'w').write('a\\n2\\n')", "print(open('data.csv').read())"]
    df = flow(tmp_path, cells)
    assert inputs(df, 1) == {("file:data.csv", 0)}


def test_absolute_path_is_not_staged(tmp_path):
    df = flow(tmp_path, ["open('/tmp/x.txt', 'w').write('1')", "print(open('/tmp/x.txt').read())"])
    assert inputs(df, 1) == set()


def test_file_written_in_a_function_called_later(tmp_path):
    cells = [
        "def dump():\n    open('f.txt', 'w').write('1')",
        "dump()",
        "print(open('f.txt').read())",
    ]
    df = flow(tmp_path, cells)
    assert effects(df, 0).file_writes == set()
    assert effects(df, 1).file_writes == {"f.txt"}
    assert inputs(df, 2) == {("file:f.txt", 1)}


# --- unserializable values -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("producer", "consumer", "var"),
    [
        ("gen = (i * i for i in range(3))", "print(sum(gen))", "gen"),
        ("fh = open('x.txt', 'w')", "fh.write('a')", "fh"),
        ("def g():\n    yield 1\nit = g()", "print(next(it))", "it"),
        ("import sqlite3\ncon = sqlite3.connect(':memory:')", "con.execute('select 1')", "con"),
    ],
)
def test_unserializable_value_consumed_later(tmp_path, producer, consumer, var):
    df = flow(tmp_path, ["x = 1", producer, consumer])
    found = diagnostics(df, "unserializable")
    assert len(found) == 1
    (diag,) = found
    assert diag.location.cell_index == 1
    assert diag.location.line == producer.count("\n") + 1
    assert var in diag.message
    assert "2" in diag.message


def test_unserializable_value_used_only_in_its_cell_is_fine(tmp_path):
    df = flow(tmp_path, ["gen = (i for i in range(3))\nprint(list(gen))", "print(1)"])
    assert diagnostics(df, "unserializable") == []


def test_unserializable_value_rebound_is_fine(tmp_path):
    df = flow(tmp_path, ["gen = (i for i in range(3))\ngen = list(gen)", "print(gen)"])
    assert diagnostics(df, "unserializable") == []


# --- conditional definitions ---------------------------------------------------------------


def test_name_bound_under_if_passes_the_old_value_through(tmp_path):
    cells = ["x = 0\nflag = True", "if flag:\n    x = 1\n    y = 2", "print(x, y)"]
    df = flow(tmp_path, cells)
    fx = effects(df, 1)
    assert {"x", "y"} <= fx.writes
    assert "x" in fx.reads
    assert inputs(df, 1) == {("x", 0), ("flag", 0)}
    assert inputs(df, 2) == {("x", 1), ("y", 1)}
    assert {"x", "y"} <= df.cell(1).outputs


@pytest.mark.parametrize(
    "code",
    [
        "for i in range(3):\n    x = i",
        "while False:\n    x = 1",
        "try:\n    x = 1\nexcept Exception:\n    pass",
    ],
)
def test_names_bound_in_loops_and_try_pass_through(tmp_path, code):
    df = flow(tmp_path, ["x = 0", code, "print(x)"])
    assert ("x", 0) in inputs(df, 1)
    assert inputs(df, 2) == {("x", 1)}


def test_name_bound_on_every_path_is_not_a_pass_through(tmp_path):
    df = flow(tmp_path, ["x = 0", "x = 1\nif x:\n    x = 2", "print(x)"])
    assert inputs(df, 1) == set()
    assert inputs(df, 2) == {("x", 1)}


# --- directives in the analysis ------------------------------------------------------------


def test_skipped_cell_is_left_out(tmp_path):
    skipped = nbformat.v4.new_code_cell("x = 2")
    skipped.metadata["tags"] = ["nb2cwl:skip"]
    df = flow(tmp_path, ["x = 1", skipped, "print(x)"])
    assert [c.index for c in df.cells] == [0, 2]
    assert inputs(df, 2) == {("x", 0)}
    (note,) = diagnostics(df, "skipped")
    assert note.location.cell_index == 1


def test_workflow_autoin_false_limits_inputs(tmp_path):
    cell = nbformat.v4.new_code_cell("print(a, b)")
    cell.metadata["workflow"] = {"step": {"in": ["a"], "autoin": False}}
    df = flow(tmp_path, ["a = 1\nb = 2", cell])
    assert inputs(df, 1) == {("a", 0)}


def test_workflow_declared_out_is_written(tmp_path):
    cell = nbformat.v4.new_code_cell("import mylib\nmylib.fill()")
    cell.metadata["workflow"] = {"step": {"out": ["result"]}}
    df = flow(tmp_path, [cell, "print(result)"])
    assert "result" in effects(df, 0).writes
    assert inputs(df, 1) == {("result", 0)}


def test_malformed_directive_raises_from_the_analysis(tmp_path):
    cell = nbformat.v4.new_code_cell("x = 1")
    cell.metadata["workflow"] = {"step": {"autoin": "no"}}
    with pytest.raises(DirectiveError) as info:
        flow(tmp_path, ["y = 0", cell])
    assert info.value.location.cell_index == 1


def test_package_installs_are_said_once_each(tmp_path):
    """`%pip install` and `!pip install` do what they do in the kernel, where the step runs:
    one warning each, at its line (not a second one for the files it may change)."""
    df = flow(tmp_path, ["%pip install numpy\nimport numpy", "x = 1\n!python -m pip install x",
                         "!uv pip install y", "!ls"])
    installs = diagnostics(df, "installs-packages")
    assert [(d.location.cell_index, d.location.line) for d in installs] == [(0, 1), (1, 2),
                                                                            (2, 1)]
    assert installs[0].message.startswith("%pip install numpy installs packages where the step "
                                          "runs, as it does in the kernel's environment")
    assert not diagnostics(df, "magic-skipped")
    assert [d.location.cell_index for d in diagnostics(df, "unresolved-io")] == [3]


# --- regressions: each of these once gave a silently wrong dataflow -----------------------


def test_file_written_by_method_on_a_module_rooted_chain(tmp_path):
    df = flow(tmp_path, ["import pandas as pd", 'pd.DataFrame({"a": [1]}).to_csv("t.csv")',
                         'y = pd.read_csv("t.csv")'])
    assert effects(df, 1).file_writes == {"t.csv"}
    assert ("file:t.csv", 1) in inputs(df, 2)


def test_conditional_del_passes_the_value_through(tmp_path):
    df = flow(tmp_path, ["x = 1\nc = True", "if c:\n    del x", "print(x)"])
    assert ("x", 0) in inputs(df, 1)
    assert inputs(df, 2) == {("x", 1)}


def test_conditional_string_rebinding_reads_either_path(tmp_path):
    """`path` is one of the two strings: the cell may read either file."""
    df = flow(tmp_path, ['path = "a.txt"\nc = True', 'open("a.txt", "w").write("1")',
                         'if c:\n    path = "b.txt"', "print(open(path).read())"])
    assert not effects(df, 3).opaque_reads
    assert effects(df, 3).file_reads == {"a.txt", "b.txt"}
    assert ("file:a.txt", 1) in inputs(df, 3)


def test_conditional_rebinding_forgets_the_known_type(tmp_path):
    df = flow(tmp_path, ["import mylib\nx = mylib.make()\nc = True", "if c:\n    x = []",
                         "x.frob()", "print(x)"])
    assert inputs(df, 3) == {("x", 2)}


def test_conditional_rebinding_keeps_the_alias(tmp_path):
    df = flow(tmp_path, ["a = [1]\nc = True", "b = a", "if c:\n    b = [5]", "b.append(1)",
                         "print(a)"])
    assert inputs(df, 4) == {("a", 3)}


def test_parameter_mutation_through_a_chain_of_calls(tmp_path):
    df = flow(tmp_path, ["def g(x):\n    x.append(1)\ndef f(y):\n    g(y)", "lst = []",
                         "f(lst)", "print(lst)"])
    assert "lst" in effects(df, 2).mutates
    assert inputs(df, 3) == {("lst", 2)}


def test_call_of_a_function_defined_later_counts_as_mutating_its_arguments(tmp_path):
    df = flow(tmp_path, ["def f(y):\n    helper(y)", "def helper(z):\n    z.append(1)",
                         "lst = []", "f(lst)", "print(lst)"])
    assert inputs(df, 4) == {("lst", 3)}


def test_whole_notebook_walks_happen_once_not_once_per_cell(tmp_path, monkeypatch):
    """Compiling stays linear in the number of cells: whether the notebook imports TensorFlow
    is found once (asked for every cell, it made 3,000 cells take 13 s instead of 1 s)."""
    from nb2cwl.analysis import training

    walks = []
    walk = training._walk_for_tensorflow
    monkeypatch.setattr(training, "_walk_for_tensorflow",
                        lambda module: walks.append(module) or walk(module))
    analyse_notebook(read_notebook(make_notebook(
        tmp_path, ["import numpy as np"] + [f"v{i} = model{i}.fit(x)" for i in range(50)])))
    assert len(walks) == 1


def test_an_enumerate_index_shares_nothing_with_the_collection(tmp_path):
    """`for i, row in enumerate(rows)`: the index is a new int (a list it is stored in is
    not changed when `rows` is), while `row` is an item of `rows` (a list holding it is)."""
    df = flow(tmp_path, [
        "rows = [[1], [2]]",
        "indices, kept = [], []\nfor i, row in enumerate(rows):\n"
        "    indices.append(i)\n    kept.append(row)",
        "rows[0].append(3)",
    ])
    assert "kept" in effects(df, 2).mutates
    assert "indices" not in effects(df, 2).mutates


def test_a_definition_is_replayed_as_written_at_its_lines(tmp_path):
    """A step replays a def as the kernel ran it (comments, decorators, its lines in the
    cell: a warning from it names the cell's line); a statement sharing its line with another
    keeps astroid's rendering of itself alone."""
    df = flow(tmp_path, [
        "import os; x = 1\n\n# helpers\n@staticmethod\ndef f(a):\n    # note\n    return a\n",
    ])
    definitions = df.cell(0).analysis.definitions
    assert definitions["f"].line == 4
    assert definitions["f"].code == "@staticmethod\ndef f(a):\n    # note\n    return a\n"
    assert definitions["os"].line is None and definitions["os"].code == "import os"


def test_a_replayed_definition_is_its_own_statement_whatever_the_line_breaks(tmp_path):
    """Lines are counted as Python counts them: a form feed (which str.splitlines breaks at)
    does not shift the text to another statement."""
    df = flow(tmp_path, ["x = 1\n\x0c\ndef f():\n    return 1\ndef g():\n    return 2\n"])
    definitions = df.cell(0).analysis.definitions
    assert definitions["g"].code.startswith("def g()")
    assert definitions["f"].code.startswith("def f()")


def test_an_enumerate_item_unpacked_further_stays_an_item_of_the_collection(tmp_path):
    df = flow(tmp_path, [
        "pairs = [([1], 1), ([2], 2)]",
        "kept = []\nfor i, (row, n) in enumerate(pairs):\n    kept.append(row)",
        "pairs[0][0].append(3)",
    ])
    assert "kept" in effects(df, 2).mutates


def test_calls_into_libraries_are_not_parsed_for_notebook_functions(tmp_path) -> None:
    """Looking for the notebook's own functions a call runs (training loops) never reads a
    library's source: `np.linalg.eigvalsh(m).max()` cannot run a notebook function."""
    import subprocess
    import sys

    path = tmp_path / "nb.ipynb"
    cells = ["import numpy as np\nrng = np.random.default_rng(0)",
             "draws = []\nfor i in range(4):\n    m = rng.normal(size=(9, 9))\n"
             "    draws.append(float(np.linalg.eigvalsh(m @ m.T).max()))"]
    nbformat.write(nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(c) for c in cells]), path)
    script = ("import sys, astroid\nfrom nb2cwl.api import compile_notebook\n"
              "compile_notebook(sys.argv[1])\n"
              "print(sorted(m for m in astroid.MANAGER.astroid_cache if m.startswith('numpy')))")
    done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "numpy.linalg" not in done.stdout, done.stdout


def test_a_throwaway_loop_variable_is_no_use_of_the_last_result(tmp_path) -> None:
    """`for _ in range(n)` only passes `_` through (an empty loop leaves it): independent
    cells that show results stay independent of it and of each other."""
    df = flow(tmp_path, ["a = 3\na", "import math\nt = 0\nfor _ in range(40):\n"
                         "    t += math.sqrt(2)\nprint(t)", "b = 4\nb"])
    assert data_inputs(df, 1) == set() and data_inputs(df, 2) == set()


def test_print_shows_no_result_so_it_leaves_the_last_one(tmp_path) -> None:
    """A cell ending with print(...) binds no `_`: a later `_` is the result shown before."""
    df = flow(tmp_path, ["a = 3\na", "print('between')", "shown = _ + 1"])
    assert producer_of(df, 2, "_") == 0 and data_inputs(df, 1) == set()
    own = flow(tmp_path, ["print = lambda *a: 5\na = 3\na", "print('x')", "shown = _"])
    assert producer_of(own, 2, "_") == 1  # the notebook's own print returns a value
