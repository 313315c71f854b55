"""Generate nb2cwl's own test/example notebooks.

Run from anywhere:

    python notebooks/make_notebooks.py

Each notebook is written next to this script. The output is deterministic: cell ids are
fixed, readable names, there are no outputs and every execution_count is None, so running
the script again on an unchanged file rewrites byte-identical notebooks.

Rules the notebooks follow (the tests compare their text outputs cell by cell):

* every code cell prints something or ends with an expression, except the two cells of
  linear_pipeline.ipynb that deliberately only import / only define a function;
* no memory addresses, timings, object reprs with ``at 0x...``, or printed sets of
  strings; floats drawn at random are rounded to 6 decimals;
* only the standard library, numpy, pandas and matplotlib are used;
* each notebook runs in well under 2 s, except independent_branches.ipynb, whose
  independent cells each sleep 1.5 s on purpose.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
LANGUAGE_INFO = {"name": "python"}
ID_RE = re.compile(r"^[a-zA-Z0-9-_]+$")


def md(cell_id: str, text: str) -> tuple[str, str, str]:
    return ("markdown", cell_id, text)


def code(cell_id: str, text: str) -> tuple[str, str, str]:
    return ("code", cell_id, text)


def build(cells: list[tuple[str, str, str]]) -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = dict(LANGUAGE_INFO)
    seen: set[str] = set()
    for kind, cell_id, text in cells:
        if not ID_RE.match(cell_id) or len(cell_id) > 64:
            raise ValueError(f"bad cell id {cell_id!r}")
        if cell_id in seen:
            raise ValueError(f"duplicate cell id {cell_id!r}")
        seen.add(cell_id)
        source = textwrap.dedent(text).strip("\n")
        if kind == "markdown":
            nb.cells.append(new_markdown_cell(source, id=cell_id))
        else:
            nb.cells.append(new_code_cell(source, id=cell_id, execution_count=None, outputs=[]))
    nbformat.validate(nb)
    return nb


# ---------------------------------------------------------------------------------------
# 1. linear_pipeline
# ---------------------------------------------------------------------------------------

LINEAR_PIPELINE = [
    md("intro", """
        # Linear pipeline

        The simplest shape: a straight chain of cells where each one uses the variable
        made by the cell before it (numbers -> transformed -> aggregated -> report).

        It also has a cell that **only imports** modules and a cell that **only defines**
        a helper function which is first used two cells later. Those two cells print
        nothing on purpose; every other code cell prints.
    """),
    code("imports", """
        import math
        import statistics
    """),
    md("about-numbers", "Build the input list."),
    code("make-numbers", """
        numbers = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]
        print("numbers:", numbers)
    """),
    code("define-helper", '''
        def describe(values):
            """Return a one-line description of a list of numbers."""
            return f"n={len(values)} min={min(values)} max={max(values)}"
    '''),
    md("about-transform", "Transform each number: square root, rounded to 4 decimals."),
    code("transform", """
        roots = [round(math.sqrt(n), 4) for n in numbers]
        print("roots:", roots)
    """),
    md("about-aggregate", "Aggregate the transformed values, using the helper defined above."),
    code("aggregate", """
        stats = {
            "sum": round(sum(roots), 4),
            "mean": round(statistics.mean(roots), 4),
            "median": round(statistics.median(roots), 4),
            "stdev": round(statistics.stdev(roots), 4),
        }
        summary_line = describe(roots)
        print(summary_line)
        stats
    """),
    md("about-report", "Format the final report from the aggregate."),
    code("report", """
        report = "\\n".join(f"{key:>6}: {value:.4f}" for key, value in stats.items())
        report = f"Report ({summary_line})\\n" + report
        print(report)
    """),
    code("report-length", """
        len(report.splitlines())
    """),
]

# ---------------------------------------------------------------------------------------
# 2. mutation_aliases
# ---------------------------------------------------------------------------------------

MUTATION_ALIASES = [
    md("intro", """
        # Mutation and aliases

        Later cells **mutate** objects created by earlier cells instead of rebinding them:
        `list.append`, `dict.update`, `set.add`, augmented assignment (`total += ...`,
        `lst += [...]`), a subscript store into a numpy array, an attribute store on a
        user class instance, in-place pandas changes, and `del`.

        It also checks **aliasing**: `b = a` in one cell, `b.append(1)` in a later cell, and
        a still later cell that prints `a`, which must show the appended element.
    """),
    code("imports", """
        import warnings

        import numpy as np
        import pandas as pd
        print("numpy and pandas imported")
    """),
    md("about-create", "Create the objects that later cells will mutate."),
    code("create", """
        items = ["apple", "banana"]
        d = {"k": 1}
        s = {1, 2, 3}
        total = 10
        lst = [1, 2]
        arr = np.zeros(3)
        print(items, d, sorted(s), total, lst, arr.tolist())
    """),
    md("about-mutate", "Mutating method calls."),
    code("list-append", """
        items.append("cherry")
        print(items)
    """),
    code("dict-update", """
        d.update({"k": 42, "extra": "yes"})
        print(d)
    """),
    code("set-add", """
        s.add(10)
        print(sorted(s))
    """),
    md("about-augassign", "Augmented assignment on an int (rebinds) and on a list (mutates in place)."),
    code("augassign-int", """
        total += 5
        print("total =", total)
    """),
    code("augassign-list", """
        lst += [3, 4]
        print("lst =", lst)
    """),
    md("about-subscript", "Subscript store into a numpy array."),
    code("numpy-subscript", """
        arr[0] = 7.5
        arr[1:] = [1.0, 2.0]
        print(arr.tolist())
    """),
    md("about-class", "A small class, defined in its own cell, and an attribute store on an instance."),
    code("define-class", """
        class Tally:
            def __init__(self, label):
                self.label = label
                self.count = 0

            def __repr__(self):
                return f"Tally({self.label!r}, count={self.count})"

        print("defined", Tally.__name__)
    """),
    code("make-instance", """
        obj = Tally("clicks")
        obj
    """),
    code("attribute-store", """
        obj.count = 3
        obj.count += 1
        print(obj.count)
    """),
    md("about-alias", "Aliasing: `b` is another name for the list `a`."),
    code("alias", """
        a = [10, 20]
        b = a
        print("b is a:", b is a)
    """),
    code("alias-mutate", """
        b.append(1)
        print("b =", b)
    """),
    code("alias-read", """
        print("a =", a)
    """),
    md("about-del", "Delete a variable in a later cell than the one that created it."),
    code("make-x", """
        x = "temporary"
        print(x)
    """),
    code("del-x", """
        del x
        print("x still defined:", "x" in globals())
    """),
    md("about-pandas", "In-place pandas changes: drop a column and add a new one."),
    code("make-df", """
        df = pd.DataFrame({"a": [1, 2, 3], "b": [4.0, 5.0, 6.0], "junk": ["x", "y", "z"]})
        df
    """),
    code("df-drop", """
        with warnings.catch_warnings():
            # pandas >= 3.1 deprecates inplace=True (the warning text holds a temp path)
            warnings.simplefilter("ignore")
            df.drop(columns=["junk"], inplace=True)
        print(list(df.columns))
    """),
    code("df-new-column", """
        df["new"] = df["a"] * 10 + df["b"]
        df
    """),
    md("about-read", "A cell that only **reads** the mutated values."),
    code("read-only", """
        print(len(items), d["k"], sorted(s), total, lst, arr.tolist(), obj.count, a)
        print(df["new"].tolist())
    """),
]

# ---------------------------------------------------------------------------------------
# 3. functions_late_binding
# ---------------------------------------------------------------------------------------

FUNCTIONS_LATE_BINDING = [
    md("intro", """
        # Functions and late binding

        Functions are defined in one cell and called in later ones. Python looks globals up
        **when a function runs**, not when it is defined, so:

        * `scaled()` reads a global `scale` that is only defined *after* the function;
        * a later cell rebinds `scale`, and the next call must see the new value;
        * `offset_scaled()` calls `scaled()` (a transitive read of `scale` and `offset`);
        * `bump()` changes a global with `global counter`;
        * a class method reads a global;
        * a lambda stored in a variable is used later.
    """),
    code("define-scaled", """
        def scaled(x):
            return x * scale

        print("defined scaled()")
    """),
    md("about-scale", "`scale` is defined only now, after the function."),
    code("set-scale", """
        scale = 2
        print("scale =", scale)
    """),
    code("call-scaled-1", """
        first = scaled(10)
        print("scaled(10) =", first)
    """),
    md("about-rebind", "Rebind `scale`: the next call must use the new value."),
    code("rebind-scale", """
        scale = 5
        print("scale =", scale)
    """),
    code("call-scaled-2", """
        second = scaled(10)
        print("scaled(10) =", second)
    """),
    md("about-transitive", "A function that calls another user function and reads one more global."),
    code("define-offset-scaled", """
        def offset_scaled(x):
            return scaled(x) + offset

        offset = 1
        print("defined offset_scaled(); offset =", offset)
    """),
    code("call-offset-scaled", """
        values = [offset_scaled(i) for i in range(4)]
        print(values)
    """),
    md("about-global", "A function that updates a global with the `global` statement."),
    code("define-bump", """
        counter = 0

        def bump(step=1):
            global counter
            counter += step
            return counter

        print("counter =", counter)
    """),
    code("call-bump", """
        bump()
        bump(3)
        print("counter after two bumps =", counter)
    """),
    code("call-bump-again", """
        print("bump() returned", bump(10))
        print("counter =", counter)
    """),
    md("about-class", "A class whose method reads globals (`greeting`, defined after the class, and `scale`)."),
    code("define-class", """
        class Greeter:
            def __init__(self, name):
                self.name = name

            def greet(self):
                return f"{greeting}, {self.name}! (scale is {scale})"

        print("defined", Greeter.__name__)
    """),
    code("set-greeting", """
        greeting = "Hello"
        greeter = Greeter("notebook")
        print(greeter.greet())
    """),
    code("change-greeting", """
        greeting = "Goodbye"
        print(greeter.greet())
    """),
    md("about-lambda", "A lambda stored in a variable, used in a later cell."),
    code("define-lambda", """
        square_plus_offset = lambda v: v * v + offset
        print("defined square_plus_offset")
    """),
    code("use-lambda", """
        offset = 100
        [square_plus_offset(i) for i in range(4)]
    """),
    code("final", """
        print(first, second, values, counter, scaled(3), offset_scaled(3))
    """),
]

# ---------------------------------------------------------------------------------------
# 4. files_write_read
# ---------------------------------------------------------------------------------------

FILES_WRITE_READ = [
    md("intro", """
        # Files written and read back

        Cells write files to the working directory (a text file in a sub-folder, a `.npy`
        array, a `.csv` table, a `.png` figure) and later cells read them back. One cell
        reads a file whose name is held in a variable set by an earlier cell.
    """),
    code("imports", """
        import os

        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np
        import pandas as pd

        print("backend:", matplotlib.get_backend().lower())
    """),
    md("about-text", "Write a text file into a folder created by the same cell."),
    code("write-text", """
        os.makedirs("results", exist_ok=True)
        with open("results/summary.txt", "w") as fh:
            fh.write("line one\\n")
            fh.write("line two\\n")
        print("wrote results/summary.txt")
    """),
    md("about-npy", "Write a numpy array."),
    code("write-npy", """
        vector = np.arange(6) * 1.5
        np.save("vector.npy", vector)
        print("saved", vector.tolist())
    """),
    md("about-csv", "Write a table as CSV."),
    code("write-csv", """
        df = pd.DataFrame({"city": ["Turin", "Pisa", "Rome"], "population_k": [848, 90, 2750]})
        df.to_csv("table.csv", index=False)
        print("wrote table.csv with", len(df), "rows")
    """),
    md("about-png", "Save a matplotlib figure."),
    code("write-png", """
        fig, ax = plt.subplots(figsize=(4, 3))
        ax.plot(vector, marker="o")
        ax.set_title("vector")
        plt.savefig("plot.png")
        plt.close(fig)
        print("saved plot.png")
    """),
    md("about-read", "Read everything back."),
    code("read-text", """
        text = open("results/summary.txt").read()
        print(text, end="")
        print("lines:", len(text.splitlines()))
    """),
    code("read-npy", """
        loaded = np.load("vector.npy")
        print(loaded.tolist(), "sum =", float(loaded.sum()))
    """),
    code("read-csv", """
        table = pd.read_csv("table.csv")
        table
    """),
    code("check-png", """
        print(os.path.exists("plot.png"))
        print(os.path.getsize("plot.png") > 0)
    """),
    md("about-name-variable", "The file name is held in a variable in one cell and used in a later one."),
    code("set-name", """
        name = "table.csv"
        print("name =", name)
    """),
    code("read-by-name", """
        again = pd.read_csv(name)
        print(again["population_k"].sum(), list(again.columns))
    """),
]

# ---------------------------------------------------------------------------------------
# 5. random_numbers
# ---------------------------------------------------------------------------------------

RANDOM_NUMBERS = [
    md("intro", """
        # Random numbers

        Both global random generators (`random` and `numpy.random`) are seeded once, and
        later cells draw from them **in order**. The outputs are deterministic only if the
        generator state flows from cell to cell exactly as in a sequential run. A separate
        `np.random.default_rng(7)` generator does not touch the global state.

        Floats are printed rounded to 6 decimals.
    """),
    code("imports", """
        import random
        import numpy as np
        print("random and numpy imported")
    """),
    code("seed", """
        random.seed(1)
        np.random.seed(2)
        print("seeded: random=1, numpy=2")
    """),
    md("about-helper", "A helper that draws from numpy's global generator, called much later."),
    code("define-roll", """
        def roll_dice(n):
            return np.random.randint(1, 7, size=n).tolist()

        print("defined roll_dice()")
    """),
    md("about-stdlib", "Draws from the standard-library generator."),
    code("random-random", """
        r = random.random()
        print(round(r, 6))
    """),
    code("random-randint", """
        k = random.randint(1, 100)
        print(k)
    """),
    code("random-shuffle", """
        deck = list(range(10))
        random.shuffle(deck)
        print(deck)
    """),
    md("about-numpy", "Draws from numpy's global generator."),
    code("np-rand", """
        u = np.random.rand(3)
        print([round(float(v), 6) for v in u])
    """),
    code("np-normal", """
        z = np.random.normal(size=4)
        print([round(float(v), 6) for v in z])
    """),
    code("np-choice", """
        picks = np.random.choice(["red", "green", "blue"], size=5)
        print(picks.tolist())
    """),
    md("about-both", "One cell draws from both generators."),
    code("both", """
        a = random.uniform(0, 1)
        b = float(np.random.uniform(0, 1))
        print(round(a, 6), round(b, 6))
    """),
    md("about-call-helper", "Call the helper defined earlier: it continues numpy's global stream."),
    code("call-roll", """
        rolls = roll_dice(6)
        print(rolls)
    """),
    md("about-rng", "A local generator with its own seed: independent of the global state."),
    code("local-rng", """
        rng = np.random.default_rng(7)
        local = rng.normal(size=3)
        print([round(float(v), 6) for v in local])
    """),
    code("after-rng", """
        print(round(random.random(), 6), round(float(np.random.rand()), 6))
    """),
    code("summary", """
        print(round(r, 6), k, deck[:3], rolls, len(picks))
    """),
]

# ---------------------------------------------------------------------------------------
# 6. independent_branches
# ---------------------------------------------------------------------------------------

INDEPENDENT_BRANCHES = [
    md("intro", """
        # Independent branches

        One cell creates `data`; three cells then each compute something different from
        it and do not depend on each other, so a workflow can run them **in parallel**.
        Each sleeps 1.5 s to make the parallelism measurable (about 4.5 s sequentially,
        about 1.5 s in parallel). A final cell combines the three results.
    """),
    code("imports", """
        import time
        print("time imported")
    """),
    code("make-data", """
        data = list(range(1, 31))
        print("data has", len(data), "items")
    """),
    md("about-branches", "Three independent branches."),
    code("branch-evens", """
        time.sleep(1.5)
        evens = [x for x in data if x % 2 == 0]
        print("evens:", evens)
    """),
    code("branch-odds", """
        time.sleep(1.5)
        odds = [x for x in data if x % 2 == 1]
        print("odds:", odds)
    """),
    code("branch-squares", """
        time.sleep(1.5)
        squares_sum = sum(x * x for x in data)
        print("sum of squares:", squares_sum)
    """),
    md("about-combine", "Join the branches."),
    code("combine", """
        combined = {"evens": sum(evens), "odds": sum(odds), "squares": squares_sum}
        print(combined)
        print("check:", sum(evens) + sum(odds) == sum(data))
    """),
]

# ---------------------------------------------------------------------------------------
# 7. example (README demo)
# ---------------------------------------------------------------------------------------

EXAMPLE = [
    md("intro", """
        # Example analysis

        A small, realistic analysis used as the README demo for nb2cwl:

        1. generate a synthetic (seeded) dataset of three groups;
        2. **branch A**: summary statistics per group;
        3. **branch B**: a linear fit of `y` against `x`;
        4. **branch C**: a bootstrap interval of the slope, in 8 independent batches;
        5. plot the data and the fit;
        6. write `summary.csv` and print a short report.

        Branches A, B and C only depend on the dataset, and C's batches on nothing but
        their seeds, so a workflow runs them in parallel.
    """),
    code("setup", """
        %matplotlib inline
        import matplotlib.pyplot as plt
        import numpy as np
        import pandas as pd

        print("libraries loaded")
    """),
    md("about-data", "## Synthetic dataset\n\n120 measurements: `y = 2.5 x + group effect + noise`."),
    code("generate-data", """
        rng = np.random.default_rng(42)
        n_per_group = 40
        effects = {"control": 0.0, "treatment-a": 3.0, "treatment-b": -2.0}

        frames = []
        for group, effect in effects.items():
            x = rng.uniform(0, 10, n_per_group)
            y = 2.5 * x + effect + rng.normal(0, 2.0, n_per_group)
            frames.append(pd.DataFrame({"group": group, "x": x, "y": y}))
        df = pd.concat(frames, ignore_index=True)
        print(df.shape)
        df.head().round(3)
    """),
    md("about-summary", "## Branch A: summary statistics per group"),
    code("group-summary", """
        summary = df.groupby("group").agg(
            n=("y", "size"),
            mean_x=("x", "mean"),
            mean_y=("y", "mean"),
            std_y=("y", "std"),
        )
        summary.round(3)
    """),
    md("about-fit", "## Branch B: linear fit\n\nOne least-squares line for all groups together."),
    code("linear-fit", """
        slope, intercept = np.polyfit(df["x"], df["y"], 1)
        residuals = df["y"] - (slope * df["x"] + intercept)
        rmse = float(np.sqrt(np.mean(residuals**2)))
        print(f"y = {slope:.3f} * x + {intercept:.3f}  (rmse {rmse:.3f})")
    """),
    md("about-bootstrap", """
        ## Branch C: how certain is the slope?

        A bootstrap in 8 independent batches, each with a seed of its own: the batches run
        side by side as a workflow.
    """),
    code("bootstrap", """
        def bootstrap_slopes(seed, resamples=5000):
            batch_rng = np.random.default_rng(seed)
            xv, yv = df["x"].to_numpy(), df["y"].to_numpy()
            found = np.empty(resamples)
            for i in range(resamples):
                idx = batch_rng.integers(0, len(xv), len(xv))
                found[i] = np.polyfit(xv[idx], yv[idx], 1)[0]
            return found


        batches = []
        for seed in range(8):
            batches.append(bootstrap_slopes(seed))
        slopes = np.concatenate(batches)
        low, high = np.percentile(slopes, [2.5, 97.5])
        print(f"slope 95% interval from {len(slopes)} resamples: [{low:.3f}, {high:.3f}]")
    """),
    md("about-plot", "## Plot\n\nPoints coloured by group, with the fitted line."),
    code("plot", """
        fig, ax = plt.subplots(figsize=(6, 4))
        for group, sub in df.groupby("group"):
            ax.scatter(sub["x"], sub["y"], s=12, label=group)
        xs = np.linspace(0, 10, 50)
        ax.plot(xs, slope * xs + intercept, color="black", linewidth=1.5, label="fit")
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        ax.legend()
        ax.set_title("Synthetic data and linear fit")
        plt.show()
    """),
    md("about-write", "## Save the summary"),
    code("write-summary", """
        summary.round(4).to_csv("summary.csv")
        print("wrote summary.csv:", len(summary), "groups")
    """),
    md("about-report", "## Report"),
    code("report", """
        best = summary["mean_y"].idxmax()
        lines = [
            f"groups: {', '.join(summary.index)}",
            f"rows: {len(df)}",
            f"highest mean y: {best} ({summary.loc[best, 'mean_y']:.3f})",
            f"fit: slope {slope:.3f}, intercept {intercept:.3f}, rmse {rmse:.3f}",
            f"slope 95% interval: [{low:.3f}, {high:.3f}]",
        ]
        print("\\n".join(lines))
    """),
]

# ---------------------------------------------------------------------------------------
# 8. magics_and_shell
# ---------------------------------------------------------------------------------------

MAGICS_AND_SHELL = [
    md("intro", """
        # IPython magics and shell lines

        Cells that are not plain Python: a line magic (`%matplotlib inline`), a shell
        escape (`!echo ...`), and a cell magic (`%%writefile`) that writes a file which a
        later ordinary cell reads back. (No `%time`/`%timeit`: their output is not
        deterministic.)
    """),
    code("line-magic", """
        %matplotlib inline
        import matplotlib.pyplot as plt
        print("inline plotting enabled")
    """),
    md("about-shell", "A shell escape line."),
    code("shell-echo", """
        !echo hello from the shell
    """),
    md("about-writefile", "A cell magic: the whole cell body becomes the file `notes.txt`."),
    code("writefile", """
        %%writefile notes.txt
        first note
        second note
        third note
    """),
    md("about-read", "An ordinary cell reads the file written by the cell magic."),
    code("read-notes", """
        with open("notes.txt") as fh:
            notes = fh.read().splitlines()
        print(len(notes), "notes")
        for i, note in enumerate(notes, 1):
            print(i, note)
    """),
    code("use-notes", """
        upper = [note.upper() for note in notes]
        upper
    """),
]

NOTEBOOKS = {
    "linear_pipeline.ipynb": LINEAR_PIPELINE,
    "mutation_aliases.ipynb": MUTATION_ALIASES,
    "functions_late_binding.ipynb": FUNCTIONS_LATE_BINDING,
    "files_write_read.ipynb": FILES_WRITE_READ,
    "random_numbers.ipynb": RANDOM_NUMBERS,
    "independent_branches.ipynb": INDEPENDENT_BRANCHES,
    "example.ipynb": EXAMPLE,
    "magics_and_shell.ipynb": MAGICS_AND_SHELL,
}

# Code cells that intentionally produce no output (everything else must print).
SILENT_CELLS = {
    "linear_pipeline.ipynb": ["imports", "define-helper"],
}


def main() -> None:
    for filename, cells in NOTEBOOKS.items():
        path = HERE / filename
        nbformat.write(build(cells), str(path))
        print(f"wrote {path.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
