"""State outside the variables: settings replayed in later steps, cells kept together, aliasing
through objects, magics and the kernel's history, at the level of the analysis and the IR."""

from __future__ import annotations

import pytest
from test_analysis import data_inputs, effects, flow, make_notebook

from nb2cwl.api import compile_notebook
from nb2cwl.options import CompileOptions

ONE_STEP_PER_CELL = CompileOptions(granularity="cell")

# --- settings: replayed where the statement can run again on its own -------------------

REPLAYED = [
    ("import pandas as pd\npd.set_option('display.max_rows', 5)", "pandas"),
    ("import pandas as pd\npd.options.display.precision = 2", "pandas"),
    ("import numpy as np\nnp.set_printoptions(precision=3)", "numpy"),
    ("import numpy as np\nnp.seterr(all='ignore')", "numpy"),
    ("import matplotlib.pyplot as plt\nplt.style.use('ggplot')", "matplotlib"),
    ("import matplotlib.pyplot as plt\nplt.rcParams['figure.figsize'] = (4, 3)", "matplotlib"),
    ("import matplotlib as mpl\nmpl.rc('font', size=9)", "matplotlib"),
    ("import matplotlib.pyplot as plt\nplt.rcParams.update({'font.size': 9})", "matplotlib"),
    ("import seaborn as sns\nsns.set_theme(style='whitegrid')", "matplotlib"),
    ("import warnings\nwarnings.filterwarnings('ignore')", ""),
    ("import logging\nlogging.basicConfig(level=logging.INFO)", "logging"),
    ("import logging\nlogging.getLogger('x').setLevel(logging.DEBUG)", "logging"),
    ("import os\nos.environ['MY_FLAG'] = '1'", ""),
    ("import sys\nsys.path.append('lib')", ""),
    ("import sklearn\nsklearn.set_config(display='text')", "sklearn"),
    ("%matplotlib inline", "matplotlib"),
    ("%config InlineBackend.figure_format = 'retina'", ""),
    ("%load_ext autoreload\n%autoreload 2", ""),
    ("%precision 3", ""),
    ("%matplotlib inline\nfrom matplotlib_inline.backend_inline import set_matplotlib_formats\n"
     "set_matplotlib_formats('svg')", "matplotlib"),
    ("import pandas as pd\nfrom tqdm.auto import tqdm\ntqdm.pandas()", "pandas"),
]


@pytest.mark.parametrize(("cell", "owner"), REPLAYED, ids=[c for c, _ in REPLAYED])
def test_settings_that_can_run_again_are_replayed(tmp_path, cell, owner):
    df = flow(tmp_path, [cell, "x = 1", "print(x)"])
    settings = df.settings
    assert settings and all(s.cell_index == 0 for s in settings)
    assert owner in {o for s in settings for o in s.owners}
    assert df.together == []  # nothing kept together: the state is carried by replaying


def test_a_logger_bound_to_a_name_is_replayed_with_its_binding(tmp_path):
    df = flow(tmp_path, ["import logging\nlog = logging.getLogger('app')",
                         "log.setLevel(logging.WARNING)", "log.warning('x')"])
    (setting,) = df.settings
    assert setting.cell_index == 1
    assert {d.names for d in setting.requires} >= {("log",), ("logging",)}


@pytest.mark.parametrize("cell", [
    "import pandas as pd\nrows = 5\npd.set_option('display.max_rows', rows)",  # a data value
    "import pandas as pd\nDEBUG = True\nif DEBUG:\n    pd.set_option('display.max_rows', 5)",
    "import os\nos.chdir('/tmp')",  # the working directory moves every relative path
    "%cd /tmp",
    # a class registered on pandas' classes: its definition is no setting to replay
    "import pandas as pd\n@pd.api.extensions.register_dataframe_accessor('money')\n"
    "class Money:\n    def __init__(self, frame):\n        self.frame = frame",
])
def test_settings_that_cannot_run_again_keep_the_rest_together(tmp_path, cell):
    df = flow(tmp_path, [cell, "x = 1", "print(x)"])
    assert [(k.first, k.last) for k in df.together] == [(0, 2)]
    assert df.settings == [] or all(s.cell_index != 0 for s in df.settings)


def test_a_setting_made_inside_a_function_keeps_the_cells_together(tmp_path):
    df = flow(tmp_path, ["import pandas as pd\nrows = 3\n"
                         "def setup():\n    pd.set_option('display.max_rows', rows)",
                         "setup()", "df = pd.DataFrame({'a': range(9)})", "df"])
    assert [(k.first, k.last) for k in df.together] == [(1, 3)]


# --- state no step can carry: kept together --------------------------------------------

def test_a_tensorflow_seed_keeps_every_later_tensorflow_cell_with_it(tmp_path):
    df = flow(tmp_path, [
        "import tensorflow as tf\nimport numpy as np",
        "tf.random.set_seed(7)",
        "x = np.arange(4)",  # not TensorFlow: between, and kept because ranges are contiguous
        "layer = tf.keras.layers.Dense(2)",
        "print(x.sum())",
        "y = layer(tf.ones((1, 3)))\nprint(y.shape)",
        "print('after')",
    ])
    assert [(k.first, k.last) for k in df.together] == [(1, 5)]
    reasons = " ".join(r for k in df.together for _, _, r in k.reasons)
    assert "TensorFlow's global seed" in reasons


def test_keras_draws_python_and_numpy_random_state(tmp_path):
    df = flow(tmp_path, ["import random\nimport keras\nrandom.seed(1)",
                         "model = keras.Sequential([keras.layers.Dense(1)])"])
    assert ("rng:random", 0) in {(i.var, i.producer) for i in df.cell(1).inputs}


def test_a_library_nb2cwl_does_not_know_keeps_its_users_together(tmp_path):
    df = flow(tmp_path, ["import mylib", "mylib.configure(level=3)", "a = 1",
                         "r = mylib.run(a)", "print(r)", "print('unrelated')"])
    assert [(k.first, k.last) for k in df.together] == [(1, 4)]


def test_scikit_learn_without_random_state_draws_from_numpy(tmp_path):
    df = flow(tmp_path, [
        "import numpy as np\nfrom sklearn.model_selection import train_test_split\n"
        "np.random.seed(0)\nX = np.arange(20).reshape(10, 2)",
        "a, b = train_test_split(X)",
        "c, d = train_test_split(X, random_state=1)",
    ])
    assert "rng:numpy" in effects(df, 1).rng
    assert "rng:numpy" not in effects(df, 2).rng


def test_an_lru_cache_keeps_its_callers_together(tmp_path):
    df = flow(tmp_path, ["import functools\n@functools.lru_cache\ndef f(n):\n    return n",
                         "f(1)", "x = 2", "print(f.cache_info())"])
    assert [(k.first, k.last) for k in df.together] == [(1, 3)]


def test_an_array_view_written_through_keeps_its_readers_together(tmp_path):
    df = flow(tmp_path, ["import numpy as np\na = np.arange(6)\nv = a[:3]",
                         "a[0] = 99", "print(v)", "print('other')"])
    assert [(k.first, k.last) for k in df.together] == [(0, 2)]


def test_an_array_view_never_written_through_keeps_nothing_together(tmp_path):
    df = flow(tmp_path, ["import numpy as np\na = np.arange(6)\nv = a[:3]",
                         "print(v.sum())", "print(a.sum())"])
    assert df.together == []


# --- aliasing through objects -------------------------------------------------------------

ALIASES = [
    # constructor keeps its argument; a method changes it
    (["class R:\n    def __init__(self, data):\n        self.data = data\n"
      "    def add(self, x):\n        self.data.append(x)",
      "data = [1]\nrec = R(data)", "rec.add(2)", "print(data)"], 3, "data", 2),
    # a partial holds the list it appends to
    (["import functools\nlog = []\ndef add(t, x):\n    t.append(x)",
      "rec = functools.partial(add, log)", "rec(1)", "print(log)"], 3, "log", 2),
    # a function returns a global object
    (["REG = []\ndef get():\n    return REG", "r = get()", "r.append(1)", "print(REG)"],
     3, "REG", 2),
    # a method called on a function's result
    (["class Reg:\n    def __init__(self):\n        self.items = []\n"
      "    def record(self, x):\n        self.items.append(x)\nREG = Reg()\n"
      "def get():\n    return REG", "get().record(3)", "print(REG.items)"], 2, "REG", 1),
    # a list of handlers: calling one runs its effects
    (["hits = []\nhandlers = [lambda: hits.append(1)]", "for h in handlers:\n    h()",
      "print(hits)"], 2, "hits", 1),
    # an item appended to a list, then changed
    (["a = []\nrow = [1]\na.append(row)", "row.append(2)", "print(a)"], 2, "a", 1),
    # a class changed through type(self)
    (["class C:\n    n = 0\n    def hit(self):\n        type(self).n += 1", "C().hit()",
      "print(C.n)"], 2, "C", 1),
    # a function that fills its own default
    (["def f(x, seen=[]):\n    seen.append(x)\n    return seen", "f(1)", "print(f(2))"],
     2, "f", 1),
    # a property whose getter changes the object
    (["class B:\n    def __init__(self):\n        self.n = 0\n    @property\n"
      "    def v(self):\n        self.n += 1\n        return 1\nb = B()", "b.v", "print(b.n)"],
     2, "b", 1),
]


@pytest.mark.parametrize(("cells", "reader", "var", "producer"), ALIASES,
                         ids=[str(i) for i in range(len(ALIASES))])
def test_changes_through_objects_reach_the_cells_that_read_them(tmp_path, cells, reader, var,
                                                               producer):
    df = flow(tmp_path, cells)
    assert (var, producer) in data_inputs(df, reader), data_inputs(df, reader)


def test_instances_share_the_default_their_class_keeps(tmp_path):
    df = flow(tmp_path, ["class Bag:\n    def __init__(self, items=[]):\n"
                         "        items.append(1)\n        self.items = items",
                         "a = Bag()", "b = Bag()", "print(a.items is b.items)"])
    assert ("a", 2) in data_inputs(df, 3) and ("b", 2) in data_inputs(df, 3)


# --- magics ---------------------------------------------------------------------------------

def test_code_in_time_magics_is_analysed(tmp_path):
    df = flow(tmp_path, ["import math", "%time total = math.fsum(range(5))",
                         "%%time\nsquares = [i * i for i in range(3)]", "print(total, squares)"])
    assert data_inputs(df, 3) == {("total", 1), ("squares", 2)}


def test_dollar_and_brace_expansions_are_reads(tmp_path):
    df = flow(tmp_path, ["name = 'x'\nn = 2", "!echo $name {n + 1}",
                         "%%bash -s \"$name\"\necho $1"])
    assert data_inputs(df, 1) == {("name", 0), ("n", 0)}
    assert data_inputs(df, 2) == {("name", 0)}


def test_writefile_with_a_known_name_is_a_file_write(tmp_path):
    df = flow(tmp_path, ["fname = 'helper.txt'", "%%writefile $fname\nhello",
                         "print(open('helper.txt').read())"])
    assert ("file:helper.txt", 1) in {(i.var, i.producer) for i in df.cell(2).inputs}


def test_skipped_magics_compile_with_a_note(tmp_path):
    path = make_notebook(tmp_path, ["%pip install numpy", "%load_ext tensorboard\n"
                                    "%tensorboard --logdir logs", "print(1)"])
    workflow = compile_notebook(path)
    assert set(workflow.skipped_magics) == {"tensorboard"}  # %pip runs where the step runs
    codes = [d.code for d in workflow.diagnostics]
    assert codes.count("magic-skipped") == 1 and codes.count("installs-packages") == 1


def test_who_reads_every_variable(tmp_path):
    df = flow(tmp_path, ["a = 1", "b = [2]", "%who"])
    assert data_inputs(df, 2) == {("a", 0), ("b", 1)}


def test_an_unknown_magic_makes_the_notebook_one_step(tmp_path):
    workflow = compile_notebook(make_notebook(tmp_path, ["a = 1", "%sql select 1", "print(a)"]))
    assert [s.name for s in workflow.steps] == ["whole_notebook"]


# --- the kernel's history -----------------------------------------------------------------

def test_underscore_reads_the_last_result_shown(tmp_path):
    df = flow(tmp_path, ["3 + 4", "x = 1", "print(_)"])
    assert ("_", 0) in data_inputs(df, 2)


def test_results_are_not_chained_when_nothing_reads_them(tmp_path):
    df = flow(tmp_path, ["3 + 4", "5", "print(1)"])
    assert data_inputs(df, 1) == set()


def test_input_history_makes_the_notebook_one_step(tmp_path):
    workflow = compile_notebook(make_notebook(tmp_path, ["a = 1", "print(In[1])"]))
    assert [s.name for s in workflow.steps] == ["whole_notebook"]


# --- empty cells and explain --------------------------------------------------------------

def test_empty_and_comment_cells_are_no_steps(tmp_path):
    workflow = compile_notebook(make_notebook(tmp_path, ["a = 1", "   \n", "# just a note",
                                                         "print(a)"]), ONE_STEP_PER_CELL)
    assert [[c.index for c in s.cells] for s in workflow.steps] == [[0], [3]]
    assert [v.role for v in workflow.cells] == ["step", "empty", "empty", "step"]


def test_explain_names_the_reasons_for_a_merged_step(tmp_path):
    workflow = compile_notebook(make_notebook(tmp_path, [
        "import tensorflow as tf", "tf.random.set_seed(1)", "v = tf.ones(2)", "print(v)"]))
    (step,) = workflow.steps
    assert step.name == "cells_1_to_3"
    assert any(r.startswith("kept together: In [2] line 1: tensorflow.random.set_seed()")
               for r in step.reasons)
