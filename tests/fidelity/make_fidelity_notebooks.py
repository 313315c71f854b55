"""Generate the fidelity corpus: notebooks written the way data scientists write them, each
relying on state that one cell sets and later cells see.

    python tests/fidelity/make_fidelity_notebooks.py

Every notebook is deterministic (seeded, no clocks, no absolute paths), quick (a few seconds
in a kernel; the TensorFlow ones under about 20 s on 2 cores), and writes files only under its
own folder. `tests/test_fidelity.py` runs each one top to bottom with nbclient and as a
workflow with `nb2cwl run`, and compares every cell's outputs. `cases.py` is generated too:
the kinds of state each notebook exercises, the files it needs beside it, and the modules it
imports. Running the script again rewrites byte-identical files.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}

#: name -> (kinds, cells, needs); a cell starting with "md:" is markdown
NOTEBOOKS: dict[str, tuple[tuple[str, ...], list[str], tuple[str, ...]]] = {}


def notebook(name: str, kinds: tuple[str, ...], needs: tuple[str, ...] = ()):
    def register(cells: list[str]) -> None:
        NOTEBOOKS[name] = (kinds, cells, needs)
    return register


DATA = """\
import numpy as np
import pandas as pd
rng = np.random.default_rng(42)
n = 120
sales = pd.DataFrame({
    "region": rng.choice(["north", "south", "east", "west"], n),
    "product": rng.choice(["widget", "gadget", "doohickey"], n),
    "units": rng.integers(1, 50, n),
    "price": rng.uniform(2.5, 30.0, n).round(2),
})
sales["revenue"] = sales["units"] * sales["price"]"""

# --- matplotlib and seaborn settings -----------------------------------------------------

notebook("mpl_style_rcparams", ("matplotlib-settings",), ("matplotlib",))([
    "md:# Styling plots once, at the top",
    "%matplotlib inline\nimport matplotlib.pyplot as plt\nimport numpy as np\n"
    "plt.style.use('ggplot')\nplt.rcParams['figure.figsize'] = (5, 3)\n"
    "plt.rcParams['axes.titlesize'] = 'small'",
    "x = np.linspace(0, 2 * np.pi, 50)\ny = np.sin(x)",
    "md:The style set above applies to every later figure.",
    "print(plt.rcParams['axes.facecolor'], plt.rcParams['figure.figsize'])",
    "fig, ax = plt.subplots()\nax.plot(x, y)\nax.set_title('sine')\nplt.show()",
    "plt.rcParams.update({'lines.linewidth': 3.0, 'font.size': 9})",
    "print(plt.rcParams['lines.linewidth'], plt.rcParams['font.size'])\n"
    "plt.plot(x, np.cos(x));",
])

notebook("mpl_rc_function", ("matplotlib-settings",), ("matplotlib",))([
    "import matplotlib as mpl\nimport matplotlib.pyplot as plt\nmpl.rc('font', size=11)\n"
    "mpl.rc('axes', grid=True)",
    "values = [3, 1, 4, 1, 5, 9, 2, 6]",
    "print(mpl.rcParams['font.size'], mpl.rcParams['axes.grid'])",
    "plt.figure(figsize=(4, 2))\nplt.bar(range(len(values)), values)\nplt.show()",
])

notebook("seaborn_theme", ("seaborn-settings", "matplotlib-settings"), ("seaborn",))([
    "md:# Seaborn theme",
    "import seaborn as sns\nimport matplotlib.pyplot as plt\nsns.set_theme(style='whitegrid', "
    "context='talk', palette='deep')",
    DATA,
    "print(plt.rcParams['axes.facecolor'], plt.rcParams['font.size'], "
    "plt.rcParams['axes.grid'])",
    "ax = sns.barplot(data=sales, x='region', y='units', errorbar=None)\nax.set_title('units')\n"
    "plt.show()",
    "sns.set_context('paper')\nprint(plt.rcParams['font.size'])",
    "summary = sales.groupby('product')['revenue'].sum().round(2)\nsummary",
])

# --- numpy ---------------------------------------------------------------------------------

notebook("numpy_printoptions", ("numpy-printoptions",))([
    "import numpy as np\nnp.set_printoptions(precision=3, suppress=True, linewidth=60)",
    "weights = np.array([1 / 3, 2 / 3, 1e-8, 12345.678901])\nmatrix = np.arange(12) / 7",
    "print(weights)",
    "weights",
    "matrix.reshape(3, 4)",
    "np.set_printoptions(threshold=5)\nnp.arange(100)",
])

notebook("numpy_seterr", ("numpy-seterr",))([
    "import numpy as np\nold = np.seterr(divide='ignore', invalid='ignore')",
    "a = np.array([1.0, 0.0, -1.0])\nb = np.array([0.0, 0.0, 2.0])",
    "ratio = a / b\nprint(ratio)",
    "np.seterr(divide='raise')\ntry:\n    a / b\nexcept FloatingPointError as exc:\n"
    "    print('raised:', exc)",
])

# --- pandas --------------------------------------------------------------------------------

notebook("pandas_display_options", ("pandas-options",), ("pandas",))([
    "md:# Sales report",
    "import pandas as pd\npd.set_option('display.max_rows', 8)\n"
    "pd.set_option('display.precision', 2)\npd.options.display.float_format = '{:,.1f}'.format",
    DATA,
    "sales.head(12)",
    "print(sales.describe())",
    "by_region = sales.groupby('region').agg(units=('units', 'sum'), "
    "revenue=('revenue', 'mean'))\nby_region",
    "pd.reset_option('display.float_format')\nby_region",
])

notebook("pandas_extensions", ("pandas-extensions",), ("pandas", "tqdm"))([
    "md:# Methods added to pandas' classes: an accessor, tqdm's progress_apply",
    "import math\nimport pandas as pd\nfrom tqdm import tqdm\ntqdm.pandas()",
    DATA,
    "def objective(a):\n    total = 0.0\n    for k in range(3000):\n"
    "        total += math.sin(a * k)\n    return round(total, 6)\n"
    "values = [objective(a / 10) for a in range(1, 9)]\nprint(values[:3])",
    "print(sales['units'].progress_apply(lambda u: u * 2).sum())",
    "@pd.api.extensions.register_dataframe_accessor('money')\nclass Money:\n"
    "    def __init__(self, frame):\n        self._frame = frame\n\n"
    "    def total(self):\n        return round(float(self._frame['revenue'].sum()), 2)",
    "values = [objective(a / 20) for a in range(1, 9)]\nprint(values[:3])",
    "print(sales.money.total())",
])

notebook("pandas_max_columns", ("pandas-options", "wide-dataframe"), ("pandas",))([
    "import pandas as pd\nimport numpy as np\npd.set_option('display.max_columns', 6)\n"
    "pd.set_option('display.width', 70)",
    "wide = pd.DataFrame(np.arange(60).reshape(3, 20) * 37,\n"
    "                    columns=[f'feature_{i:02d}' for i in range(20)])",
    "wide",
    "print(wide)",
])

notebook("wide_dataframes", ("wide-dataframe",), ("pandas",))([
    "md:# A wide table, as the kernel wraps it",
    "import pandas as pd\nimport numpy as np",
    "cols = [f'measurement_{i}' for i in range(28)]\n"
    "wide = pd.DataFrame(np.arange(28 * 4).reshape(4, 28) * 123.25, columns=cols)",
    "wide",
    "print(wide)",
    "wide.T.head(10)",
    "long_text = pd.DataFrame({'description': ['a fairly long description of an item ' * 3] "
    "* 3, 'value': [1, 2, 3]})\nlong_text",
    "print(wide.describe())",
])

# --- warnings and logging ------------------------------------------------------------------

notebook("warnings_filters", ("warnings-filters",))([
    "import warnings\nimport numpy as np\nwarnings.filterwarnings('ignore', "
    "category=RuntimeWarning)",
    "values = np.array([1.0, -1.0, 4.0])",
    "print(np.sqrt(values))",
    "warnings.simplefilter('error', UserWarning)\ntry:\n    warnings.warn('strict now')\n"
    "except UserWarning as exc:\n    print('caught', exc)",
    "print(np.log(values))",
])

notebook("warnings_shown", ("warnings-filters",))([
    "import warnings\n\ndef legacy(x):\n    warnings.warn('legacy() is deprecated', "
    "FutureWarning, stacklevel=2)\n    return x * 2",
    "print(legacy(1))",
    "print(legacy(2))",
    "warnings.filterwarnings('ignore', category=FutureWarning)",
    "print(legacy(3))",
])

notebook("warnings_from_values", ("warnings-filters",))([
    "md:# A warning raised in a function handed on as a value names the cell's file",
    "import numpy as np\nsafe_log = lambda v: np.log(v)",
    "import math\n\ndef objective(a):\n    total = 0.0\n    for k in range(3000):\n"
    "        total += math.sin(a * k)\n    return round(total, 6)\n\n"
    "values = [objective(a / 10) for a in range(1, 9)]\nprint(values[:3])",
    "print(safe_log(np.array([0.0, 1.0, np.e])))",
])

notebook("warnings_from_replayed_functions", ("warnings-filters",))([
    "md:# A warning raised in a function replayed in another step names the cell's file and"
    " line",
    "import numpy as np\nimport warnings\n\n# helpers\ndef safe_log(values):\n"
    "    # log of the values, zeros warn\n    return np.log(values)\n\n"
    "@np.vectorize\ndef flag(value):\n    if value > 0.5:\n"
    "        warnings.warn('a value over the threshold', UserWarning)\n    return value * 2",
    "import math\n\ndef objective(a):\n    total = 0.0\n    for k in range(3000):\n"
    "        total += math.sin(a * k)\n    return round(total, 6)\n\n"
    "values = [objective(a / 10) for a in range(1, 9)]\nprint(values[:3])",
    "print(safe_log(np.array([0.0, 1.0, np.e])))\nprint(flag(np.array([0.2, 0.9])))",
])

notebook("warnings_in_scattered_loops", ("warnings-filters",))([
    "md:# A scattered loop shows a warning as often as one kernel does",
    "import math\nimport warnings\nimport numpy as np\n\n"
    "data = [np.array([float(i % 3), 1.0]) for i in range(12)]",
    "def score(arr):\n    total = 0.0\n    for k in range(3000):\n"
    "        total += math.sin(k * 0.001)\n    return float(np.log(arr).sum()) + round(total, 3)\n"
    "\nscores = [score(a) for a in data]\nprint(scores[:4])",
    "warnings.simplefilter('always', RuntimeWarning)",
    "again = [score(a) for a in data]\nprint(again == scores)",
    "warnings.simplefilter('default', RuntimeWarning)\n\ndef heavy(a):\n    total = 0.0\n"
    "    for k in range(3000):\n        total += math.sin(a[0] * k)\n    return round(total, 3)",
    "results = []\nfor arr in data:\n    base = heavy(arr)\n    # the loop's own line warns\n"
    "    results.append(float(np.log(arr).sum()) + base)  # zeros\nprint(results[:4])",
])

notebook("logging_config", ("logging-config",))([
    "import logging\nlogging.basicConfig(level=logging.INFO, format='%(levelname)s "
    "%(name)s: %(message)s')\nlog = logging.getLogger('pipeline')",
    "log.setLevel(logging.DEBUG)",
    "records = [3, 1, 2]\nlog.info('loaded %d records', len(records))",
    "log.debug('sorted: %s', sorted(records))\nprint('done')",
    "logging.getLogger('pipeline').setLevel(logging.WARNING)\nlog.info('not shown')\n"
    "log.warning('shown')",
])

# --- environment, import path, working directory -------------------------------------------

notebook("environ_variables", ("environ",))([
    "import os\nos.environ['MODEL_NAME'] = 'baseline'\nos.environ['N_FOLDS'] = '5'",
    "%env DATASET=iris",
    "print(os.environ['MODEL_NAME'], int(os.environ['N_FOLDS']) * 2)",
    "print(os.environ.get('DATASET'))",
    "!echo $MODEL_NAME",
])

notebook("sys_path_helpers", ("sys-path",))([
    "import os\nos.makedirs('helpers', exist_ok=True)",
    "%%writefile helpers/textutils.py\ndef shout(text):\n    return text.upper() + '!'\n",
    "import sys\nsys.path.append('helpers')",
    "from textutils import shout\nprint(shout('hello'))",
])

notebook("working_directory", ("working-directory",))([
    "import os\nos.makedirs('project/data', exist_ok=True)",
    "os.chdir('project')\nprint(os.path.basename(os.getcwd()))",
    "with open('data/numbers.txt', 'w') as fh:\n    fh.write('1\\n2\\n3\\n')",
    "with open('data/numbers.txt') as fh:\n    print(sum(int(line) for line in fh))",
    "print(sorted(os.listdir('data')))",
])

notebook("cd_magic", ("working-directory", "magics"))([
    "import os\nos.makedirs('work/out', exist_ok=True)",
    "%cd -q work",
    "with open('out/a.txt', 'w') as fh:\n    fh.write('hello')",
    "print(open('out/a.txt').read(), sorted(os.listdir('out')))",
])

# --- random numbers ------------------------------------------------------------------------

notebook("numpy_random_indirect", ("python-numpy-random",), ("pandas", "sklearn"))([
    "import random\nimport numpy as np\nimport pandas as pd\nrandom.seed(3)\nnp.random.seed(3)",
    "df = pd.DataFrame({'x': np.arange(20), 'y': np.arange(20) ** 2})",
    "print(df.sample(4))",
    "print(np.random.permutation(6), random.randint(0, 100))",
    "from sklearn.model_selection import train_test_split\n"
    "train, test = train_test_split(df, test_size=0.25)\nprint(sorted(test['x']))",
    "from sklearn.ensemble import RandomForestClassifier\n"
    "clf = RandomForestClassifier(n_estimators=5).fit(df[['x']], df['y'] % 2)\n"
    "print(clf.predict(df[['x']])[:10])",
])

# --- IPython magics and display -------------------------------------------------------------

notebook("magics_timing", ("magics",), ("pandas",))([
    "md:# Timing with magics",
    "import pandas as pd\nimport numpy as np",
    "%time frame = pd.DataFrame({'k': np.arange(1000) % 7, 'v': np.arange(1000)})",
    "%%time\ngrouped = frame.groupby('k')['v'].sum()\nprint(grouped.head(3))",
    "%timeit -n 1 -r 1 frame['v'].sum()",
    "print(len(frame), int(grouped.sum()))",
])

notebook("magics_shell", ("magics",))([
    "name = 'report'\nn = 3\nfname = 'notes.txt'",
    "!echo hello $name {n * 2}",
    "%%bash -s \"$name\" 7\necho \"first: $1, second: $2\"",
    "%%writefile $fname\nline one\nline two",
    "with open(fname) as fh:\n    print(fh.read().splitlines())",
    "%ls notes.txt",
    "files = !ls *.txt\nprint(files)",
    "%%script python3\nprint('from a script', 2 + 2)",
    "%killbgscripts",
])

notebook("magics_settings", ("magics", "display"), ("matplotlib",))([
    "%matplotlib inline\n%config InlineBackend.figure_format = 'retina'\n%precision 3",
    "import math\nimport matplotlib.pyplot as plt",
    "math.pi",
    "[math.e, math.tau]",
    "plt.plot([1, 3, 2])\nplt.show()",
    "%load_ext autoreload\n%autoreload 2",
    "print('reloading is on')",
])

notebook("magics_capture_who", ("magics",))([
    "alpha = 1\nbeta = 'two'\ngamma = [3]",
    "%%capture captured\nprint('quiet output')\nfor i in range(3):\n    print(i)",
    "print(captured.stdout.splitlines())",
    "captured.show()",
    "%who",
    "%who_ls",
])

notebook("display_outputs", ("display",), ("pandas",))([
    "import pandas as pd\nfrom IPython.display import HTML, Markdown, display",
    "df = pd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})\ndisplay(df)\nprint('after display')\ndf",
    "display(Markdown('**bold** text'), HTML('<b>html</b>'))",
    "%%html\n<i>an html cell</i>",
    "6 * 7",
    "print(_ + 1)",
    "x = 10;",
    "x * 2;",
    "x, x * 3",
])

notebook("display_clear_updates", ("display",))([
    "from IPython.display import clear_output, display\nimport time",
    "for i in range(3):\n    clear_output(wait=True)\n    print('step', i)",
    "handle = display('first', display_id=True)\nhandle.update('updated')",
    "print('done')",
])

# --- aliasing through objects ---------------------------------------------------------------

notebook("aliasing_objects", ("aliasing-objects",))([
    "class Recorder:\n    def __init__(self, store):\n        self.store = store\n\n"
    "    def add(self, item):\n        self.store.append(item)",
    "history = ['start']\nrec = Recorder(history)",
    "rec.add('step 1')\nrec.add('step 2')",
    "print(history, rec.store is history)",
    "groups = {'a': [1], 'b': [2]}\nfirst = groups['a']",
    "first.append(10)",
    "print(groups)",
    "b = history\nb.append('via alias')",
    "print(history[-1])",
])

notebook("aliasing_iterators", ("aliasing-objects",))([
    "rows = [[1], [2], [3]]\nextra = [[10], [20], [30]]\n\n"
    "class Merger:\n    def merge(self, pairs):\n        for target, more in pairs:\n"
    "            target.extend(more)",
    "merger = Merger()\nmerger.merge(zip(rows, extra))",
    "print(rows)",
    "def bump(items):\n    for i, item in enumerate(items):\n        item.append(i)",
    "bump(map(lambda r: r, rows))",
    "print(rows)",
])

# Objects reachable from others: a step boundary (after a scattered loop of slow calls, or
# between every cell) must hand them on together, or keep the cells together.

notebook("aliasing_figure_parts", ("aliasing-objects", "matplotlib-figures"),
         ("matplotlib",))([
    "md:# Random walks, drawn over several cells",
    "%matplotlib inline\nimport time\nimport numpy as np\nimport matplotlib.pyplot as plt\n\n"
    "def simulate(seed):\n    time.sleep(0.3)  # one slow simulation run\n"
    "    return np.random.default_rng(seed).normal(size=40).cumsum().round(3)\n\n"
    "fig, (ax_runs, ax_final) = plt.subplots(1, 2, figsize=(6, 2.5))\n"
    "ax_runs.set_title('runs')\nax_final.set_title('final values');",
    "runs = [simulate(seed) for seed in range(6)]",
    "for run in runs:\n    ax_runs.plot(run, alpha=0.5)\n"
    "mean_line, = ax_runs.plot(np.mean(runs, axis=0), color='black', linewidth=2)",
    "ax_final.hist([run[-1] for run in runs], bins=4)\nmean_line.set_linestyle('--')",
    "checks = [simulate(seed) for seed in range(6, 12)]",
    "fig.suptitle('Random walks')\nfig",
    "print(len(ax_runs.lines), mean_line.get_linestyle(), mean_line.axes is ax_runs)",
])

notebook("aliasing_closures", ("aliasing-objects",))([
    "md:# Counters that remember their list",
    "import time\n\ndef fetch(i):\n    time.sleep(0.3)  # a slow sensor read\n"
    "    return round(1.5 * i + 0.25, 2)\n\ndef make_counter(items):\n"
    "    return lambda: len(items)\n\ndef make_summary(values):\n    def summary():\n"
    "        return f'{len(values)} readings, mean {sum(values) / len(values):.2f}'\n"
    "    return summary",
    "readings = []\ncount = make_counter(readings)\nsummary = make_summary(readings)",
    "for i in range(6):\n    readings.append(fetch(i))",
    "print(count())\nsummary()",
])

notebook("aliasing_dict_views", ("aliasing-objects",))([
    "md:# Model scores collected in a dict",
    "import time\n\ndef fit_model(name):\n    time.sleep(0.3)  # a slow fit\n"
    "    return round(0.5 + len(name) / 20, 3)\n\nscores = {}\nmodel_names = scores.keys()",
    "for name in ['ridge', 'lasso', 'svm', 'tree', 'knn', 'forest']:\n"
    "    scores[name] = fit_model(name)",
    "print(list(model_names))",
    "values = scores.values()\npairs = scores.items()",
    "for name in ['boosting', 'mlp']:\n    scores[name] = fit_model(name)",
    "print(max(values), len(model_names))\nsorted(pairs, key=lambda p: (-p[1], p[0]))[:3]",
])

notebook("aliasing_library_holders", ("aliasing-objects", "realistic"), ("pandas", "sklearn"))([
    "md:# Churn model: objects that keep what they are given",
    "import time\nimport numpy as np\nimport pandas as pd\nfrom sklearn.pipeline import Pipeline\n"
    "from sklearn.preprocessing import StandardScaler\n"
    "from sklearn.linear_model import LogisticRegression\n\nrng = np.random.default_rng(7)\n"
    "customers = pd.DataFrame({'segment': rng.choice(['a', 'b', 'c'], 60),\n"
    "                          'tenure': rng.integers(1, 60, 60),\n"
    "                          'spend': rng.gamma(2.0, 50.0, 60).round(2)})\n"
    "customers['churned'] = (customers['spend'] < 80).astype(int)",
    "by_segment = customers.groupby('segment')\nmonthly = customers['spend'].rolling(3)\n"
    "scaler = StandardScaler()\n"
    "model = Pipeline([('scale', scaler), ('clf', LogisticRegression())])",
    "def slow_feature(i):\n    time.sleep(0.3)  # a slow lookup\n    return i * 2\n\n"
    "lookups = [slow_feature(i) for i in range(6)]",
    "customers['spend_per_month'] = (customers['spend'] / customers['tenure']).round(3)\n"
    "customers.loc[0, 'spend'] = 1000.0",
    "model.fit(customers[['tenure', 'spend']], customers['churned'])",
    "more = [slow_feature(i) for i in range(6, 12)]",
    "print(scaler.mean_.round(3), scaler.scale_.round(3))",
    "monthly.mean().head(3).round(2)",
    "by_segment[['spend', 'spend_per_month']].mean().round(2)",
])

notebook("aliasing_generator_shuffle", ("aliasing-objects", "python-numpy-random"))([
    "md:# Shuffling with a seeded generator",
    "import time\nimport random\nimport numpy as np\n\ndef load_shard(i):\n"
    "    time.sleep(0.3)  # a slow read\n    return i\n\nrng = np.random.default_rng(2024)\n"
    "sample_ids = np.arange(12)\nfold_names = ['a', 'b', 'c', 'd', 'e', 'f']",
    "shards = [load_shard(i) for i in range(6)]",
    "rng.shuffle(sample_ids)\nrandom.Random(5).shuffle(fold_names)",
    "checks = [load_shard(i) for i in range(6, 12)]",
    "train_ids, test_ids = sample_ids[:9], sample_ids[9:]\nprint(fold_names)\ntrain_ids, test_ids",
])

notebook("aliasing_registry_decorator", ("aliasing-objects",))([
    "md:# Text cleaners registered by a decorator",
    "import time\n\nCLEANERS = {}\n\ndef cleaner(name):\n    def register(fn):\n"
    "        CLEANERS[name] = fn\n        return fn\n    return register\n\n"
    "def fetch_page(i):\n    time.sleep(0.3)  # a slow download\n    return f'  Page {i} TEXT  '",
    "pages = [fetch_page(i) for i in range(6)]",
    "@cleaner('strip')\ndef strip_spaces(text):\n    return text.strip()",
    "@cleaner('lower')\ndef lowercase(text):\n    return text.lower()",
    "more_pages = [fetch_page(i) for i in range(6, 12)]",
    "cleaned = pages + more_pages\nfor name, fn in sorted(CLEANERS.items()):\n"
    "    cleaned = [fn(page) for page in cleaned]\nprint(sorted(CLEANERS))\ncleaned[:3]",
])

notebook("aliasing_unpacked_lists", ("aliasing-objects",))([
    "md:# Training history in a dataclass",
    "import time\nfrom dataclasses import dataclass\n\ndef train_epoch(epoch):\n"
    "    time.sleep(0.3)  # one slow epoch\n    return round(1 / (epoch + 1), 4)\n\n"
    "@dataclass\nclass History:\n    name: str\n    train: list\n    valid: list",
    "train_losses, valid_losses = [], []\nhistory = History('baseline', train_losses, "
    "valid_losses)",
    "for epoch in range(6):\n    train_losses.append(train_epoch(epoch))",
    "valid_losses.extend(round(loss * 1.1, 4) for loss in train_losses)",
    "history",
])

notebook("aliasing_enum_identity", ("aliasing-objects",))([
    "md:# Enums defined beside the values that use them",
    "import enum\nimport time\n\nclass Stage(enum.Enum):\n    TRAIN = 'train'\n"
    "    VALID = 'valid'\n\nclass Access(enum.IntFlag):\n    READ = 1\n    WRITE = 2\n\n"
    "def process(i):\n    time.sleep(0.3)  # a slow batch\n    return i\n\n"
    "current = Stage.TRAIN\naccess = Access.READ | Access.WRITE",
    "batches = [process(i) for i in range(6)]",
    "labels = {Stage.TRAIN: 'training', Stage.VALID: 'validation'}\n"
    "print(labels.get(current, 'unknown'), current is Stage.TRAIN, Access.WRITE in access)",
])

notebook("aliasing_views_and_wrappers", ("aliasing-objects",), ("numpy",))([
    "md:# Views and wrappers across cells",
    "import numpy as np\nfrom collections import ChainMap\nfrom types import SimpleNamespace\n\n"
    "signal = np.linspace(0.0, 1.0, 12)\nwindows = np.split(signal, 3)",
    "signal -= signal.mean()",
    "[window.round(3) for window in windows]",
    "defaults = {'lr': 0.1, 'epochs': 5}\noverrides = {}\nconfig = ChainMap(overrides, defaults)\n"
    "log = []\nrun = SimpleNamespace(config=config, log=log)",
    "defaults['epochs'] = 10\nlog.append('started')",
    "print(config['epochs'], run.log)",
    "class Settings:\n    pass\n\nsettings = Settings()",
    "vars(settings).update(seed=42)\nvars(settings)['debug'] = False",
    "settings.seed, settings.debug",
])

notebook("known_gaps_functions", ("known-gaps",))([
    "import functools\n\n@functools.lru_cache(maxsize=None)\ndef fib(n):\n"
    "    return n if n < 2 else fib(n - 1) + fib(n - 2)",
    "print(fib(25))",
    "print(fib.cache_info())",
    "def remember(x, seen=[]):\n    seen.append(x)\n    return list(seen)",
    "remember('a')",
    "print(remember('b'))",
    "log = []\ndef append_to(target, item):\n    target.append(item)\n"
    "record = functools.partial(append_to, log)",
    "record(1)\nrecord(2)",
    "print(log)",
])

notebook("known_gaps_classes", ("known-gaps",))([
    "class Counter:\n    created = 0\n\n    def __init__(self):\n        type(self).created += 1",
    "c1 = Counter()\nc2 = Counter()",
    "print(Counter.created)",
    "class Bag:\n    def __init__(self, items=[]):\n        items.append(len(items))\n"
    "        self.items = items",
    "first = Bag()",
    "second = Bag()",
    "print(first.items, second.items, first.items is second.items)",
    "class Sensor:\n    def __init__(self):\n        self.reads = 0\n\n    @property\n"
    "    def value(self):\n        self.reads += 1\n        return 21",
    "s = Sensor()\nprint(s.value * 2)",
    "print(s.reads)",
])

notebook("known_gaps_objects", ("known-gaps",))([
    "class Registry:\n    def __init__(self):\n        self.names = []\n\n"
    "    def record(self, name):\n        self.names.append(name)\n\n"
    "REGISTRY = Registry()\n\ndef get_registry():\n    return REGISTRY",
    "get_registry().record('alpha')",
    "print(REGISTRY.names)",
    "reg = get_registry()",
    "reg.record('beta')",
    "print(REGISTRY.names, reg is REGISTRY, get_registry() is REGISTRY)",
    "counter = []\nhandlers = [lambda: counter.append('first'), lambda: counter.append('second')]",
    "for handler in handlers:\n    handler()",
    "print(counter)",
])

notebook("known_gaps_redefinition", ("known-gaps",))([
    "def helper(x):\n    return x + 1",
    "def work(values):\n    return [helper(v) for v in values]",
    "print(work([1, 2, 3]))",
    "def helper(x):\n    return x * 10",
    "print(work([1, 2, 3]))",
    "class Loud:\n    def __iter__(self):\n        for i in range(3):\n"
    "            print('yielding', i)\n            yield i",
    "def square(v):\n    return v * v\nsquares = [square(v) for v in Loud()]\nprint(squares)",
])

notebook("known_gaps_views", ("known-gaps",))([
    "import numpy as np\narr = np.arange(8)\nhead = arr[:3]\ntransposed = arr.reshape(2, 4).T",
    "arr[0] = 99",
    "print(head, transposed[0])",
    "head[1] = -1",
    "print(arr[:4])",
])

# --- empty cells and scripts ----------------------------------------------------------------

notebook("empty_cells", ("empty-cells",))([
    "values = [1, 2, 3]",
    "",
    "# nothing here yet\n",
    "   \n\n",
    "total = sum(values)",
    "# TODO: plot it",
    "print(total)",
])

# --- TensorFlow and Keras -------------------------------------------------------------------

TF_IMPORTS = ("import os\nos.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'\nimport numpy as np\n"
              "import tensorflow as tf\nimport keras")

notebook("tf_seed_layers", ("tf-seed",), ("tensorflow",))([
    TF_IMPORTS,
    "keras.utils.set_random_seed(1234)  # Keras draws layer seeds from Python's random",
    "layer = keras.layers.Dense(3)\nlayer.build((None, 4))\n"
    "print(round(float(tf.reduce_sum(layer.kernel)), 4))",
    "draws = tf.random.uniform((3,))\nprint(np.round(draws.numpy(), 4))",
    "ds = tf.data.Dataset.range(8).shuffle(8)\nprint(list(ds.as_numpy_iterator()))",
    "print(np.round(tf.random.normal((2,)).numpy(), 4))",
], )

notebook("keras_sequential_add", ("keras-across-cells", "tf-seed"), ("tensorflow",))([
    TF_IMPORTS + "\nkeras.utils.set_random_seed(7)",
    "X = np.random.rand(200, 4).astype('float32')\ny = (X.sum(axis=1) > 2).astype('float32')",
    "model = keras.Sequential()\nmodel.add(keras.Input(shape=(4,)))",
    "model.add(keras.layers.Dense(8, activation='relu'))\nmodel.add(keras.layers.Dropout(0.2))",
    "model.add(keras.layers.Dense(1, activation='sigmoid'))\n"
    "model.compile(optimizer='adam', loss='binary_crossentropy', metrics=['accuracy'])\n"
    "print(len(model.layers))",
    "history = model.fit(X, y, epochs=2, batch_size=32, verbose=0)\n"
    "print([round(v, 4) for v in history.history['loss']])",
    "loss, acc = model.evaluate(X, y, verbose=0)\nprint(round(loss, 4), round(acc, 4))",
])

notebook("keras_subclass", ("keras-across-cells", "tf-seed"), ("tensorflow",))([
    TF_IMPORTS,
    "class TinyNet(keras.Model):\n    def __init__(self):\n        super().__init__()\n"
    "        self.hidden = keras.layers.Dense(6, activation='relu')\n"
    "        self.out = keras.layers.Dense(1)\n\n    def call(self, x):\n"
    "        print('tracing call with shape', tuple(x.shape))\n"
    "        return self.out(self.hidden(x))",
    "keras.utils.set_random_seed(11)\nnet = TinyNet()\n"
    "net.compile(optimizer=keras.optimizers.SGD(0.05), loss='mse')",
    "X = np.linspace(0, 1, 64, dtype='float32').reshape(-1, 1)\ny = 3 * X + 1",
    "out = net(X[:2])\nprint(out.shape)",
    "hist = net.fit(X, y, epochs=3, batch_size=16, verbose=0)\n"
    "print([round(v, 4) for v in hist.history['loss']])",
    "hist2 = net.fit(X, y, epochs=1, batch_size=16, verbose=0)\n"
    "print(round(hist2.history['loss'][0], 4))",
    "print(round(float(net.evaluate(X, y, verbose=0)), 4))",
])

notebook("tf_gradient_tape", ("tf-seed", "keras-across-cells"), ("tensorflow",))([
    TF_IMPORTS + "\ntf.random.set_seed(5)",
    "X = tf.random.normal((128, 3))\ntrue_w = tf.constant([[1.0], [-2.0], [0.5]])\n"
    "y = X @ true_w + 0.1",
    "w = tf.Variable(tf.zeros((3, 1)))\nb = tf.Variable(0.0)\n"
    "opt = keras.optimizers.SGD(learning_rate=0.1)",
    "dataset = tf.data.Dataset.from_tensor_slices((X, y)).shuffle(128).batch(32)",
    "for epoch in range(3):\n    for xb, yb in dataset:\n        with tf.GradientTape() as tape:\n"
    "            loss = tf.reduce_mean((xb @ w + b - yb) ** 2)\n"
    "        grads = tape.gradient(loss, [w, b])\n        opt.apply_gradients(zip(grads, [w, b]))\n"
    "    print(epoch, round(float(loss), 4))",
    "print(np.round(w.numpy().ravel(), 3), round(float(b.numpy()), 3))",
])

# --- Jupyter-Workflow metadata --------------------------------------------------------------

JW_DEPLOYMENTS = {"deployments": {"local-a": {"type": "local", "config": {}}},
                  "version": "v1.0"}
JW_MODELS = {"models": {"model-a": {"type": "local", "config": {}}}, "version": "v1.0"}

notebook("jupyter_workflow_deployments", ("jupyter-workflow-metadata",))([
    "xs = list(range(10))\nprint(len(xs))",
    "[workflow:deployment=local-a]\nsquares = [x * x for x in xs]\nprint(squares)",
    "print(sum(squares))",
])

notebook("jupyter_workflow_models", ("jupyter-workflow-metadata",))([
    "words = ['alpha', 'beta', 'gamma']",
    "[workflow:model=model-a]\nlengths = {w: len(w) for w in words}\nprint(lengths)",
    "print(max(lengths.values()))",
])

notebook("jupyter_workflow_scatter", ("jupyter-workflow-metadata",))([
    "xs = [1, 2, 3, 4, 5, 6]",
    "[workflow:scatter=xs]\nys = [x * 10 + 1 for x in xs]\nprint(ys)",
    "print(ys[-1])",
])

# --- realistic analyses ----------------------------------------------------------------------

notebook("realistic_sales_eda", ("realistic", "pandas-options", "matplotlib-settings",
                                 "magics"), ("pandas", "matplotlib"))([
    "md:# Sales exploration\nA quick look at last quarter's orders.",
    "%matplotlib inline\nimport warnings\nimport numpy as np\nimport pandas as pd\n"
    "import matplotlib.pyplot as plt\nwarnings.filterwarnings('ignore')\n"
    "pd.set_option('display.precision', 2)\nplt.style.use('seaborn-v0_8-muted')",
    DATA,
    "md:## First look",
    "sales.head()",
    "sales.info()",
    "print(sales.shape)\nsales.describe()",
    "md:## Revenue by region",
    "by_region = sales.groupby('region')['revenue'].agg(['sum', 'mean', 'count'])\nby_region",
    "ax = by_region['sum'].plot(kind='bar', figsize=(5, 3), title='revenue by region')\n"
    "ax.set_ylabel('revenue');",
    "md:## Products",
    "pivot = sales.pivot_table(index='region', columns='product', values='units', "
    "aggfunc='sum')\npivot",
    "share = (pivot / pivot.sum()).round(3)\nshare",
    "%time top = sales.nlargest(5, 'revenue')",
    "top[['region', 'product', 'revenue']]",
    "fig, ax = plt.subplots(figsize=(4, 3))\nsales['price'].hist(ax=ax, bins=10)\nplt.show()",
    "print('total revenue', round(sales['revenue'].sum(), 2))",
])

notebook("realistic_feature_engineering", ("realistic", "python-numpy-random", "wide-dataframe"),
         ("pandas", "sklearn"))([
    "md:# Feature engineering",
    "import numpy as np\nimport pandas as pd\nfrom sklearn.preprocessing import StandardScaler\n"
    "from sklearn.model_selection import train_test_split\nnp.random.seed(0)",
    "raw = pd.DataFrame(np.random.randn(80, 5), columns=list('abcde'))\n"
    "raw['target'] = (raw['a'] + raw['b'] > 0).astype(int)",
    "raw.head()",
    "features = raw.drop(columns='target')\nfor col in list(features.columns):\n"
    "    features[f'{col}_sq'] = features[col] ** 2\n"
    "    features[f'{col}_abs'] = features[col].abs()\nfeatures.shape",
    "features.head(3)",
    "X_train, X_test, y_train, y_test = train_test_split(features, raw['target'], "
    "test_size=0.25)\nprint(X_train.shape, X_test.shape)",
    "scaler = StandardScaler().fit(X_train)\nX_train_s = scaler.transform(X_train)\n"
    "X_test_s = scaler.transform(X_test)",
    "print(np.round(X_train_s.mean(axis=0)[:5], 6))\nprint(np.round(scaler.scale_[:3], 4))",
    "corr = features.corrwith(raw['target']).sort_values(ascending=False).round(3)\ncorr.head(8)",
])

notebook("realistic_model_selection", ("realistic", "python-numpy-random", "logging-config"),
         ("pandas", "sklearn"))([
    "md:# Choosing a model",
    "import logging\nimport numpy as np\nimport pandas as pd\nfrom sklearn.datasets import "
    "make_classification\nfrom sklearn.linear_model import LogisticRegression\n"
    "from sklearn.tree import DecisionTreeClassifier\nfrom sklearn.model_selection import "
    "cross_val_score\nlogging.basicConfig(level=logging.INFO, format='%(message)s')\n"
    "log = logging.getLogger('models')",
    "X, y = make_classification(n_samples=300, n_features=8, random_state=1)\nprint(X.shape)",
    "candidates = {'logreg': LogisticRegression(max_iter=500), "
    "'tree': DecisionTreeClassifier(max_depth=3, random_state=0)}",
    "scores = {}\nfor name, model in candidates.items():\n"
    "    scores[name] = cross_val_score(model, X, y, cv=4).round(3)\n"
    "    log.info('%s: %s', name, scores[name])",
    "table = pd.DataFrame(scores).T\ntable['mean'] = table.mean(axis=1).round(3)\ntable",
    "best = table['mean'].idxmax()\nprint('best model:', best)",
    "final = candidates[best].fit(X, y)\nprint(round(final.score(X, y), 3))",
])

notebook("realistic_timeseries", ("realistic", "pandas-options", "numpy-printoptions"),
         ("pandas", "matplotlib"))([
    "md:# Daily readings",
    "import numpy as np\nimport pandas as pd\nimport matplotlib.pyplot as plt\n"
    "np.set_printoptions(precision=2)\npd.set_option('display.max_rows', 10)",
    "days = pd.date_range('2024-01-01', periods=60, freq='D')\n"
    "readings = pd.Series(np.sin(np.arange(60) / 5) * 10 + np.arange(60) * 0.3, index=days)",
    "readings.head(15)",
    "weekly = readings.resample('W').mean()\nweekly",
    "rolling = readings.rolling(7).mean()\nprint(rolling.dropna().values[:6])",
    "fig, ax = plt.subplots(figsize=(5, 3))\nreadings.plot(ax=ax)\nrolling.plot(ax=ax)\n"
    "plt.show()",
    "print(np.array([readings.min(), readings.max(), readings.mean()]))",
])

notebook("realistic_text_processing", ("realistic", "aliasing-objects", "magics"))([
    "md:# Word counts",
    "from collections import Counter, defaultdict\nimport re",
    "corpus = ['the quick brown fox', 'the lazy dog', 'quick quick fox jumps', "
    "'a dog and a fox']",
    "tokens = [re.findall(r'[a-z]+', line) for line in corpus]\ntokens",
    "counts = Counter()\nfor line in tokens:\n    counts.update(line)\ncounts.most_common(4)",
    "index = defaultdict(list)\nfor number, line in enumerate(tokens):\n"
    "    for word in set(line):\n        index[word].append(number)",
    "print(sorted(index['fox']), sorted(index['dog']))",
    "vocab = sorted(counts)\nprint(len(vocab), vocab[:5])",
    "%time longest = max(vocab, key=len)",
    "print(longest)",
])

notebook("realistic_simulation", ("realistic", "python-numpy-random", "known-gaps"),
         ("pandas",))([
    "md:# Monte Carlo queue simulation",
    "import numpy as np\nimport pandas as pd\nrng = np.random.default_rng(2024)",
    "def simulate(arrival_rate, service_rate, steps=200, rng=rng):\n"
    "    queue, served = 0, 0\n    for _ in range(steps):\n"
    "        queue += rng.poisson(arrival_rate)\n"
    "        done = min(queue, rng.poisson(service_rate))\n"
    "        queue -= done\n        served += done\n    return served, queue",
    "results = [simulate(a, 3.0) for a in (1.0, 2.0, 3.0, 4.0)]\nresults",
    "frame = pd.DataFrame(results, columns=['served', 'left'], index=[1.0, 2.0, 3.0, 4.0])\n"
    "frame",
    "print(frame['served'].sum(), frame['left'].max())",
    "print(rng.integers(0, 10, 3))",
])

notebook("realistic_tf_classifier", ("realistic", "tf-seed", "keras-across-cells",
                                     "matplotlib-settings"), ("tensorflow", "matplotlib"))([
    "md:# A small classifier",
    TF_IMPORTS + "\nimport matplotlib.pyplot as plt\nplt.rcParams['figure.figsize'] = (4, 3)",
    "keras.utils.set_random_seed(42)",
    "images = np.random.rand(300, 8, 8).astype('float32')\n"
    "labels = (images.mean(axis=(1, 2)) > 0.5).astype('int32')\nprint(images.shape, "
    "labels.mean())",
    "train_ds = tf.data.Dataset.from_tensor_slices((images[:240], labels[:240]))"
    ".shuffle(240).batch(32)\nval = (images[240:], labels[240:])",
    "model = keras.Sequential([keras.Input((8, 8)), keras.layers.Flatten(), "
    "keras.layers.Dense(16, activation='relu'), keras.layers.Dropout(0.1), "
    "keras.layers.Dense(2, activation='softmax')])\nmodel.compile('adam', "
    "'sparse_categorical_crossentropy', metrics=['accuracy'])",
    "history = model.fit(train_ds, validation_data=val, epochs=3, verbose=0)\n"
    "print({k: [round(v, 3) for v in vs] for k, vs in history.history.items()})",
    "plt.plot(history.history['loss'], label='loss')\nplt.legend()\nplt.show()",
    "pred = model.predict(val[0], verbose=0).argmax(axis=1)\n"
    "print('accuracy', round(float((pred == val[1]).mean()), 3))",
])

notebook("realistic_reporting", ("realistic", "display", "environ", "pandas-options"),
         ("pandas",))([
    "md:# Weekly report",
    "import os\nimport pandas as pd\nfrom IPython.display import display, Markdown\n"
    "os.environ['REPORT_TEAM'] = 'analytics'\npd.options.display.float_format = "
    "'{:.2f}'.format",
    DATA,
    "team = os.environ['REPORT_TEAM']\ndisplay(Markdown(f'## Report for *{team}*'))",
    "summary = sales.groupby(['region', 'product'])['revenue'].sum().unstack()\nsummary",
    "best = summary.stack().idxmax()\nprint('best seller:', best)",
    "summary.to_csv('summary.csv')\nprint(open('summary.csv').read().splitlines()[0])",
    "check = pd.read_csv('summary.csv', index_col=0)\ncheck.round(1)",
])

notebook("realistic_scatter_work", ("realistic", "python-numpy-random"), ("pandas",))([
    "md:# Parameter study",
    "import math\nimport pandas as pd",
    "def objective(a, b):\n    total = 0.0\n    for k in range(2000):\n"
    "        total += math.sin(a * k) * math.cos(b * k)\n    return round(total, 6)",
    "grid = [(a / 10, b / 10) for a in range(1, 5) for b in range(1, 4)]",
    "values = [objective(a, b) for a, b in grid]\nprint(values[:4])",
    "table = pd.DataFrame(grid, columns=['a', 'b'])\ntable['value'] = values\n"
    "table.sort_values('value').head()",
    "print(round(sum(values), 6))",
])


# --- the process a step runs in: descriptors, the kernel's magics, hashing, compiler flags --

notebook("process_outputs_and_kernel_magics", ("process-outputs", "magics"), ())([
    "md:# What the kernel shows besides Python's prints",
    "%autosave 0\nimport os\nimport subprocess\nimport sys\nimport time\n"
    "os.system('echo listing from os.system')\ntime.sleep(0.3)\nprint('python print')",
    "subprocess.run(['echo', 'from a subprocess'])\n"
    "sys.__stdout__.write('to the original stdout\\n')\n"
    "sys.__stdout__.flush()\ntime.sleep(0.3)\nprint('after them', flush=True)",
    "import ctypes\nlibc = ctypes.CDLL(None)\nlibc.puts(b'from C code')\nlibc.fflush(None)\n"
    "time.sleep(0.3)\nthreshold = 0.25",
    "os.system('echo a warning 1>&2')\ntime.sleep(0.3)\nlen?",
    "%store threshold\nprint(type(get_ipython()).__name__)",
])

notebook("figures_shown_later", ("matplotlib", "display"), ("matplotlib",))([
    "md:# Build a figure, show it later (no %matplotlib magic)",
    "import matplotlib.pyplot as plt\nimport numpy as np\nxs = np.linspace(0, 1, 20)\n"
    "fig, ax = plt.subplots(figsize=(3, 2))\nax.plot(xs, xs ** 2)\nplt.close(fig)",
    "summary = {'points': len(xs), 'max': float((xs ** 2).max())}\nsummary",
    "fig",
])

notebook("figure_formats", ("matplotlib", "display", "ipython-settings"), ("matplotlib",))([
    "md:# Vector figures for the report: set the inline formats once",
    "%matplotlib inline\nimport math\nimport matplotlib.pyplot as plt\n"
    "from matplotlib_inline.backend_inline import set_matplotlib_formats\n"
    "set_matplotlib_formats('svg')",
    "def objective(a):\n    total = 0.0\n    for k in range(3000):\n"
    "        total += math.sin(a * k)\n    return round(total, 6)\n"
    "values = [objective(a / 10) for a in range(1, 9)]\nprint(values[:3])",
    "fig, ax = plt.subplots(figsize=(3, 2))\nax.plot([1, 3, 2])\nplt.show()",
])

notebook("shell_settings_and_future", ("ipython-settings", "compiler-flags"), ("pandas",))([
    "md:# Show every expression, and postponed annotations",
    "from __future__ import annotations\nfrom IPython.core.interactiveshell import "
    "InteractiveShell\nInteractiveShell.ast_node_interactivity = 'all'\nimport pandas as pd",
    "frame = pd.DataFrame({'x': [1, 2, 3]})\nlen(frame)\nframe.x.sum()",
    "def scale(df: pd.DataFrame, by: Factor) -> pd.DataFrame:\n    return df * by",
    "scale.__annotations__\nscale(frame, 2).x.tolist()",
])

notebook("folders_and_listings", ("files", "folders"), ("matplotlib",))([
    "md:# Save figures into folders, list what is there (the handson-ml way)",
    "import os\nfrom pathlib import Path\nimport numpy as np\nimport matplotlib.pyplot as plt\n"
    "IMAGES_PATH = Path() / 'images' / 'ch1'\nIMAGES_PATH.mkdir(parents=True, exist_ok=True)\n"
    "os.makedirs('arrays', exist_ok=True)\n\n"
    "def save_fig(fig_id):\n    plt.savefig(IMAGES_PATH / f'{fig_id}.png', dpi=40)",
    "np.save('arrays/eye.npy', np.eye(3))\nnp.save('arrays/ones.npy', np.ones(4))",
    "plt.plot([1, 4, 9])\nsave_fig('squares')\nplt.close()",
    "print(sorted(os.listdir('arrays')))\nprint(sorted(p.name for p in Path('arrays').iterdir()))\n"
    "print(sorted(p.name for p in IMAGES_PATH.iterdir()))",
])

notebook("display_updated_later", ("display",), ("pandas",))([
    "md:# A status line that later cells update",
    "from IPython.display import display, HTML\nimport pandas as pd\n"
    "status = display(HTML('<b>loading</b>'), display_id=True)\nsummary = display('...', "
    "display_id='summary')",
    "frame = pd.DataFrame({'a': range(5)})\n"
    "status.update(HTML(f'<b>loaded {len(frame)} rows</b>'))",
    "from IPython.display import update_display\nupdate_display(frame.describe().T, "
    "display_id='summary')\nprint('done')",
])

notebook("string_hashing_across_cells", ("hashing",), ())([
    "md:# Sets of strings and hash buckets, used across cells",
    "text = 'the quick brown fox jumps over the lazy dog and the quick cat'\n"
    "words = text.split()\nvocab = set(words)\nbuckets = {w: hash(w) % 4 for w in vocab}",
    "word_to_index = {w: i for i, w in enumerate(vocab)}\nlen(word_to_index)",
    "order_kept = [w for w in vocab] == list(word_to_index)\n"
    "same_buckets = all(buckets[w] == hash(w) % 4 for w in words)\nprint(order_kept, same_buckets)",
])

#: Python scripts (no cell markers: one cell per group of statements between blank lines).
SCRIPTS = {
    "script_blank_lines.py": (("script-blank-lines", "numpy-printoptions", "pandas-options"),
                              ("pandas",), """\
import numpy as np
import pandas as pd

np.set_printoptions(precision=2)
pd.set_option("display.max_rows", 6)

data = np.linspace(0, 1, 7)
frame = pd.DataFrame({"x": np.arange(20), "y": np.arange(20) * 0.5})

print(data)

print(frame)

summary = frame.describe()
print(summary.loc["mean"])
"""),
}


def build(name: str, cells: list[str]) -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    if name == "jupyter_workflow_deployments":
        nb.metadata["workflow"] = JW_DEPLOYMENTS
    elif name == "jupyter_workflow_models":
        nb.metadata["workflow"] = JW_MODELS
    for number, text in enumerate(cells):
        cell_id = f"{name[:40]}-{number:02d}".replace("_", "-")
        if text.startswith("md:"):
            nb.cells.append(new_markdown_cell(text[3:], id=cell_id))
            continue
        metadata = {}
        directive = re.match(r"\[workflow:(\w+)=([\w-]+)\]\n", text)
        if directive:
            key, value = directive.groups()
            text = text[directive.end():]
            if key == "scatter":
                metadata["workflow"] = {"step": {"scatter": {"items": [value]}}}
            else:
                metadata["workflow"] = {"target": {key: value}}
        cell = new_code_cell(textwrap.dedent(text), id=cell_id)
        cell.metadata.update(metadata)
        nb.cells.append(cell)
    return nb


def write_all() -> None:
    for name, (_, cells, _) in NOTEBOOKS.items():
        nbformat.write(build(name, cells), str(HERE / f"{name}.ipynb"))
    lines = ['"""The fidelity corpus (generated by make_fidelity_notebooks.py; do not edit)."""',
             "", "from __future__ import annotations", "", "from dataclasses import dataclass",
             "", "", "@dataclass(frozen=True)", "class Case:",
             '    """One notebook of the corpus."""', "",
             "    file: str", "    kinds: tuple[str, ...]", "    needs: tuple[str, ...]", "", "",
             "CASES = ["]
    for name, (kinds, _, needs) in NOTEBOOKS.items():
        lines.append(f"    Case({name + '.ipynb'!r},\n         {kinds!r},\n         {needs!r}),")
    for name, (kinds, needs, text) in SCRIPTS.items():
        (HERE / name).write_text(text)
        lines.append(f"    Case({name!r},\n         {kinds!r},\n         {needs!r}),")
    lines.append("]")
    (HERE / "cases.py").write_text("\n".join(lines) + "\n")
    print(json.dumps({"notebooks": len(NOTEBOOKS), "scripts": len(SCRIPTS)}))


if __name__ == "__main__":
    write_all()
