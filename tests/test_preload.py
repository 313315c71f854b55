"""The step server imports the notebook's opening libraries once (analysis/preload.py,
runtime/forkserver.py): which qualify, that a step finds them imported and behaves as in
Jupyter, and when the server leaves the steps to run on their own."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest
from equivalence import run_with_nbclient, run_with_workflow

from nb2cwl.analysis.preload import preloadable
from nb2cwl.runtime import forkserver


def _both_ways(nb: nbformat.NotebookNode, source: Path) -> tuple[object, object]:
    """Write `nb` to `source`; its cells' outputs as `nb2cwl run` (one step per cell) and as
    nbclient give them."""
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, source)
    jupyter = run_with_nbclient(source, source.parent / "jupyter")
    workflow, _ = run_with_workflow(source, source.parent / "workflow", "--granularity", "cell")
    return workflow, jupyter


def test_the_opening_imports_of_known_libraries_qualify() -> None:
    assert preloadable(["get_ipython().run_line_magic('matplotlib', 'inline')\n"
                        "import numpy as np\nimport pandas as pd",
                        "from sklearn.ensemble import RandomForestClassifier\nx = 1",
                        "import scipy"]) == ("numpy", "pandas", "sklearn.ensemble")


@pytest.mark.parametrize("first", [
    "import os\nos.environ['OMP_NUM_THREADS'] = '1'\nimport numpy",
    "x = 1\nimport numpy",  # code runs first
    "import seaborn\nimport numpy",  # a library not known to change nothing
    "get_ipython().run_line_magic('env', 'OMP_NUM_THREADS=1')\nimport numpy",
    "import numpy as np\nnp.seterr(all='raise')\nimport pandas",
])
def test_anything_before_an_import_ends_the_preloaded_ones(first: str) -> None:
    found = preloadable([first])
    assert "pandas" not in found and ("numpy" not in found or first.startswith("import numpy"))


def test_imports_that_change_nothing_are_passed_over() -> None:
    assert preloadable(["import os, sys\nimport matplotlib.pyplot as plt\n"
                        "import pandas as pd"]) == ("pandas",)


def test_an_import_that_shows_something_leaves_the_steps_to_themselves(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "noisy_library.py").write_text("import warnings\nwarnings.warn('hello')\n")
    (tmp_path / "quiet_library.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert forkserver._preload(("quiet_library",))
    assert not forkserver._preload(("noisy_library",))
    assert not forkserver._acceptable({}, "", ("?",))


def test_a_step_whose_environment_differs_for_the_libraries_runs_on_its_own() -> None:
    runtime = os.path.dirname(os.path.realpath(forkserver.__file__))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")}
    request = {"runtime": runtime, "python": sys.executable, "env": env}
    assert forkserver._acceptable(request, runtime, ("numpy",), env)
    assert not forkserver._acceptable({**request, "env": {**env, "OMP_NUM_THREADS": "1"}},
                                      runtime, ("numpy",), env)
    # without preloaded libraries, the thread settings do not matter
    assert forkserver._acceptable({**request, "env": {**env, "OMP_NUM_THREADS": "1"}},
                                  runtime, (), env)


@pytest.mark.streamflow
def test_preloaded_steps_print_what_jupyter_prints(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import numpy as np\nimport pandas as pd\n"
                                  "from sklearn.linear_model import LinearRegression"),
        # what pandas decided when imported: every option, and a wide frame's repr
        nbformat.v4.new_code_cell("options = pd._config.config._registered_options\n"
                                  "print([(k, pd.get_option(k)) for k in sorted(options)])\n"
                                  "pd.DataFrame(np.zeros((3, 30)))"),
        nbformat.v4.new_code_cell("import os, sys\n"
                                  "print(os.environ.get('KMP_INIT_AT_FORK'),\n"
                                  "      os.environ.get('KMP_DUPLICATE_LIB_OK'),\n"
                                  "      'sklearn.linear_model' in sys.modules)\n"
                                  "LinearRegression().fit(np.eye(3), [1, 2, 3]).coef_.round(3)"),
    ])
    workflow, jupyter = _both_ways(nb, tmp_path / "preloaded.ipynb")
    assert workflow == jupyter


def test_a_step_with_its_own_value_for_what_an_import_set_runs_on_its_own(
        monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = os.path.dirname(os.path.realpath(forkserver.__file__))
    before = {k: v for k, v in os.environ.items() if k != "KMP_INIT_AT_FORK"}
    monkeypatch.setenv("KMP_INIT_AT_FORK", "FALSE")  # as scikit-learn's import sets it here
    request = {"runtime": runtime, "python": sys.executable, "env": dict(before)}
    assert forkserver._acceptable(request, runtime, ("sklearn",), before)
    request["env"]["KMP_INIT_AT_FORK"] = "TRUE"  # the step's own: a fresh import keeps it
    assert not forkserver._acceptable(request, runtime, ("sklearn",), before)


@pytest.mark.parametrize("cells, expected", [
    (["%matplotlib inline\nimport numpy as np\nimport pandas as pd", "x = 1"],
     ("numpy", "pandas")),
    (["import numpy as np\n%load_ext autoreload\nimport pandas as pd"], ("numpy",)),
    (["%%time\nimport numpy as np"], ()),
    (["", "import numpy as np", "# a comment\nfrom sklearn.ensemble import RandomForestClassifier",
      "import pandas as pd\nprint(1)"], ("numpy", "sklearn.ensemble", "pandas")),
])
def test_the_early_read_agrees_with_the_compiled_list(
        tmp_path: Path, cells: list[str], expected: tuple[str, ...]) -> None:
    """The step server's early list comes from the notebook's JSON alone (no nbformat, no
    IPython); where it can tell, it is the compiled workflow's, from IPython's transformation
    (a difference only costs the server a restart: StepServer.preloading)."""
    from nb2cwl.analysis.preload import notebook_preload
    from nb2cwl.frontend.reader import read_notebook

    path = tmp_path / "n.ipynb"
    nbformat.write(nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(c) for c in cells]
        + [nbformat.v4.new_markdown_cell("# Results")]), path)
    assert notebook_preload(str(path)) == expected
    compiled = preloadable(c.code for c in read_notebook(str(path)).cells if c.is_code)
    assert compiled == expected
    (tmp_path / "broken.ipynb").write_text("{")
    assert notebook_preload(str(tmp_path / "broken.ipynb")) == ()


def test_where_the_early_read_cannot_tell_it_preloads_less(tmp_path: Path) -> None:
    """An indented cell: IPython runs it dedented, Python alone cannot parse it; the early
    list stops there, and the server restarts with the compiled one."""
    from nb2cwl.analysis.preload import notebook_preload
    from nb2cwl.frontend.reader import read_notebook

    path = tmp_path / "n.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("  import numpy")]),
                   path)
    assert notebook_preload(str(path)) == ()
    assert preloadable(c.code for c in read_notebook(str(path)).cells if c.is_code) == ("numpy",)


@pytest.mark.streamflow
@pytest.mark.parametrize("opening", [
    "%matplotlib inline\nimport numpy as np\nimport pandas as pd\nimport matplotlib.pyplot as plt",
    # IPython dedents it; the early read cannot parse it: the server starts again, compiled
    "  import numpy as np\n  import pandas as pd\n  import matplotlib.pyplot as plt",
])
def test_a_data_scientists_notebook_gives_jupyters_outputs_whichever_early_list(
        tmp_path: Path, opening: str) -> None:
    """The step server's early list (the notebook's JSON) and the compiled one agree, or the
    server restarts: either way every cell shows what nbclient shows."""
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(opening),
        nbformat.v4.new_code_cell("rng = np.random.default_rng(0)\n"
                                  "sales = pd.DataFrame({'region': rng.choice(['north', 'south'],"
                                  " 40),\n                      'amount': rng.gamma(2.0, 50.0, "
                                  "40).round(2)})\nsales.head()"),
        nbformat.v4.new_code_cell("summary = sales.groupby('region')['amount'].agg(['count', "
                                  "'mean'])\nprint(summary.round(2))\nsummary"),
        nbformat.v4.new_code_cell("fig, ax = plt.subplots(figsize=(4, 3))\n"
                                  "summary['mean'].plot.bar(ax=ax)\nax.set_ylabel('mean amount')"),
    ])
    workflow, jupyter = _both_ways(nb, tmp_path / "sales.ipynb")
    assert workflow == jupyter
