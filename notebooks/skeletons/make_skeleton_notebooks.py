"""Generate the notebooks that exercise nb2cwl's map / map-reduce skeletons.

Run from anywhere:

    python notebooks/skeletons/make_skeleton_notebooks.py

Each notebook is written next to this script. The output is deterministic: cell ids are
fixed, readable names, there are no outputs and every execution_count is None, so running
the script again rewrites byte-identical notebooks.

Two families:

* ``map_*``, ``reduce_*``, ``nested_product``, ``zip_dotproduct`` and ``hinted_tasks``: every
  cell whose id starts with ``map-`` holds a loop or comprehension that nb2cwl must run as a
  scatter (split -> map over chunks -> gather);
* ``blocked_*``: every cell whose id starts with ``blocked-`` holds a loop that would qualify
  (it accumulates and calls a notebook function per item) but for one construct that makes
  its iterations depend on each other, so it must stay sequential.

Rules the notebooks follow (tests/test_skeletons.py compares their text outputs cell by cell
with a top-to-bottom Jupyter run):

* the per-item work is a function defined in an earlier cell that prints one line per item,
  so the order of the printed lines is checked too;
* 10 to 40 items, deterministic output (floats printed with repr on purpose: the sequential
  order of the float additions must be kept bit for bit), no memory addresses, no sets of
  strings printed unsorted;
* only the standard library, numpy and pandas; each notebook runs in well under 2 s;
* two `for` loops of one notebook never share a loop variable: a later `for x in ...` makes
  nb2cwl hand the earlier loop's `x` on (the later loop may run zero times), and a loop
  whose variable is needed after it stays sequential.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent

# the notebook-building helpers are shared with the core notebooks' generator
sys.path.insert(0, str(HERE.parent))
from make_notebooks import build, code, md  # noqa: E402

# A per-item function shared by most notebooks: prints one line per call.
WORK = code(
    "define-work",
    '''
    def work(x):
        """The per-item work: a little arithmetic, and one printed line."""
        y = x * x + 3 * x + 1
        print(f"work({x}) -> {y}")
        return y
''',
)

# ---------------------------------------------------------------------------------------
# Map / map-reduce forms: each `map-*` cell must be scattered
# ---------------------------------------------------------------------------------------

MAP_LIST_COMPREHENSION = [
    md(
        "intro",
        """
        # Map: list comprehension

        `[work(x) for x in xs]` calls a notebook function once per item and keeps the
        results in order: nb2cwl runs it as split -> scatter over chunks -> gather. The
        second comprehension filters with an `if`.
    """,
    ),
    WORK,
    code(
        "make-data",
        """
        xs = list(range(3, 23))
        print("xs:", xs)
    """,
    ),
    code(
        "map-comprehension",
        """
        print("before the map")
        ys = [work(x) for x in xs]
        print("ys:", ys)
    """,
    ),
    code(
        "map-comprehension-filter",
        """
        odd_squares = [work(x) for x in xs if x % 2 == 1]
        print("odd:", odd_squares)
    """,
    ),
    code(
        "use-results",
        """
        print(len(ys), len(odd_squares), sum(ys) - sum(odd_squares))
    """,
    ),
]

MAP_BUILTIN_MAP = [
    md(
        "intro",
        """
        # Map: the `map` builtin

        `list(map(work, xs))` applies a notebook function to every item, and
        `tuple(map(...))` the same into a tuple.
    """,
    ),
    WORK,
    code(
        "make-data",
        """
        xs = [7, 1, 12, 5, 9, 3, 14, 2, 11, 6, 8, 4]
        print("xs:", xs)
    """,
    ),
    code(
        "map-list-map",
        """
        ys = list(map(work, xs))
        print("ys:", ys)
    """,
    ),
    code(
        "map-tuple-map",
        """
        shifted = tuple(map(work, [x + 100 for x in xs]))
        shifted
    """,
    ),
    code(
        "use-results",
        """
        print(max(ys), min(shifted))
    """,
    ),
]

MAP_DICT_COMPREHENSION = [
    md(
        "intro",
        """
        # Map: dict comprehension

        `{k: work(v) for k, v in d.items()}` maps over the items of a dict; the result keeps
        the insertion order of the original dict.
    """,
    ),
    WORK,
    code(
        "make-data",
        """
        d = {name: len(name) * 2 + i for i, name in enumerate(
            ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta",
             "iota", "kappa", "lambda", "mu", "nu", "xi"])}
        print("d:", d)
    """,
    ),
    code(
        "map-dict-comprehension",
        """
        scores = {k: work(v) for k, v in d.items()}
        scores
    """,
    ),
    code(
        "map-dict-comprehension-filter",
        """
        big = {k.upper(): work(v) % 97 for k, v in d.items() if v > 12}
        print("big:", big)
    """,
    ),
    code(
        "use-results",
        """
        print(list(scores)[:3], sum(scores.values()), sorted(big.items())[:2])
    """,
    ),
]

MAP_LOOP_APPEND = [
    md(
        "intro",
        """
        # Map: a for loop that appends

        `ys = []` then `for x in xs: ... ys.append(...)`, with a body of several statements
        (locals computed per item, then appended), and a loop filling two lists at once.
    """,
    ),
    WORK,
    code(
        "make-data",
        """
        xs = list(range(10, 34, 2))
        print("xs:", xs)
    """,
    ),
    code(
        "map-loop-append",
        """
        ys = []
        print("start:", len(xs), "items")
        for x in xs:
            value = work(x)
            label = f"item-{x:02d}"
            half = value / 2
            ys.append((label, value, half))
        print("ys:", ys)
    """,
    ),
    code(
        "map-loop-two-lists",
        """
        evens, odds = [], []
        for n in xs:
            v = work(n // 2)
            if v % 2 == 0:
                evens.append(v)
            else:
                odds.extend([v, -v])
        print("evens:", evens)
        print("odds:", odds)
    """,
    ),
    code(
        "use-results",
        """
        print(len(ys), ys[0], ys[-1], len(evens) + len(odds))
    """,
    ),
]

MAP_ENUMERATE_SETITEM = [
    md(
        "intro",
        """
        # Map: enumerate and item assignment

        `out = [None] * len(xs)` then `for i, x in enumerate(xs): out[i] = work(x)`, and the
        same into a dict keyed by the item.
    """,
    ),
    WORK,
    code(
        "make-data",
        """
        xs = [4, 8, 15, 16, 23, 42, 5, 9, 13, 21, 1, 2, 3, 7]
        print("xs:", xs)
    """,
    ),
    code(
        "map-enumerate-setitem",
        """
        out = [None] * len(xs)
        for i, x in enumerate(xs):
            out[i] = work(x)
        print("out:", out)
    """,
    ),
    code(
        "map-dict-setitem",
        """
        by_item = {}
        for item in xs:
            by_item[item] = work(item) - item
        print("by_item:", by_item)
    """,
    ),
    code(
        "use-results",
        """
        print(out.index(work(42)), sum(by_item.values()))
    """,
    ),
]

REDUCE_AUGASSIGN = [
    md(
        "intro",
        """
        # Reduce: augmented assignment

        `total += work(x)` over floats: the gather must add the values in the original
        order, or the last bits of the float sum change (printed with `repr`). Then counting
        with `counts[k] += 1`, and building a string with `+=`.
    """,
    ),
    code(
        "define-functions",
        '''
        import collections


        def fwork(x):
            """Float work whose sum depends on the order of the additions."""
            y = 1.0 / (x + 1) + x * 0.1 + 1e-17 * x
            print(f"fwork({x}) -> {y!r}")
            return y


        def bucket(x):
            """The name of the bucket an item falls into."""
            name = "low" if x < 8 else ("mid" if x < 16 else "high")
            print(f"bucket({x}) -> {name}")
            return name
    ''',
    ),
    code(
        "make-data",
        """
        xs = [3, 17, 1, 22, 9, 14, 6, 11, 19, 2, 8, 25, 13, 5, 20, 0, 7, 16, 4, 10]
        print("xs:", xs)
    """,
    ),
    code(
        "map-float-total",
        """
        total = 0.0
        for x in xs:
            total += fwork(x)
        print(repr(total))
    """,
    ),
    code(
        "map-counts",
        """
        counts = {"low": 0, "mid": 0, "high": 0}
        for item in xs:
            counts[bucket(item)] += 1
        print(counts)
    """,
    ),
    code(
        "map-defaultdict-sum",
        """
        sums = collections.defaultdict(float)
        for n in xs:
            sums[n % 3] += fwork(n)
        print({k: repr(v) for k, v in sums.items()})
    """,
    ),
    code(
        "map-string-concat",
        """
        text = ""
        for z in xs[:10]:
            text += bucket(z)[0]
        print(text)
    """,
    ),
    code(
        "use-results",
        """
        print(repr(total), counts["mid"], sorted(sums), len(text))
    """,
    ),
]

REDUCE_BUILTINS = [
    md(
        "intro",
        """
        # Reduce: builtins and functools

        A map reduced right away: `sum(...)` of a generator expression, `max([...])` of a
        list comprehension, and `functools.reduce(operator.add, [...])`, one per cell.
    """,
    ),
    code(
        "imports",
        """
        import functools
        import operator
        print("imported", functools.__name__, operator.__name__)
    """,
    ),
    WORK,
    code(
        "make-data",
        """
        xs = [6, 2, 9, 13, 1, 7, 11, 4, 15, 8, 3, 12]
        print("xs:", xs)
    """,
    ),
    code(
        "map-sum-generator",
        """
        s = sum(work(x) for x in xs if x != 7)
        print("sum:", s)
    """,
    ),
    code(
        "map-max-list",
        """
        m = max([work(x) for x in xs])
        print("max:", m)
    """,
    ),
    code(
        "map-functools-reduce",
        """
        r = functools.reduce(operator.add, [[work(x)] for x in xs])
        r
    """,
    ),
    code(
        "use-results",
        """
        print(s == sum(r), m == max(r))
    """,
    ),
]

REDUCE_NUMPY_PANDAS = [
    md(
        "intro",
        """
        # Reduce: numpy and pandas

        A map whose results go straight into `np.mean`, `np.concatenate` or `pd.concat`.
    """,
    ),
    code(
        "imports",
        """
        import numpy as np
        import pandas as pd
        print("numpy and pandas imported")
    """,
    ),
    code(
        "define-functions",
        '''
        def work(x):
            """A float per item."""
            y = (x * 7 % 11) / 3
            print(f"work({x}) -> {y:.4f}")
            return y


        def make_array(x):
            """A small array per item; its length varies with the item."""
            a = np.arange(x % 4 + 1, dtype=np.int64) * x
            print(f"make_array({x}) -> {a.tolist()}")
            return a


        def make_frame(x):
            """A two-row frame per item."""
            print(f"make_frame({x})")
            return pd.DataFrame({"item": [x, x], "part": ["a", "b"], "value": [x * 2, x * 3]})
    ''',
    ),
    code(
        "make-data",
        """
        xs = list(range(1, 13))
        print("xs:", xs)
    """,
    ),
    code(
        "map-np-mean",
        """
        mean = np.mean([work(x) for x in xs])
        print(repr(float(mean)))
    """,
    ),
    code(
        "map-np-concatenate",
        """
        arr = np.concatenate([make_array(x) for x in xs])
        print(arr.tolist())
    """,
    ),
    code(
        "map-pd-concat",
        """
        df = pd.concat([make_frame(x) for x in xs], ignore_index=True)
        print(df.to_string())
    """,
    ),
    code(
        "use-results",
        """
        print(round(float(mean), 6), int(arr.sum()), int(df["value"].sum()), df.shape)
    """,
    ),
]

NESTED_PRODUCT = [
    md(
        "intro",
        """
        # Nested product

        Two loops over independent collections: every pair `(a, b)`, as a comprehension with
        two `for` clauses and as two nested `for` loops. nb2cwl scatters them with
        `nested_crossproduct`.
    """,
    ),
    code(
        "define-work",
        '''
        def work(a, b):
            """The work for one pair."""
            v = a * 10 + b
            print(f"work({a}, {b}) -> {v}")
            return v
    ''',
    ),
    code(
        "make-data",
        """
        A = [1, 2, 3, 4, 5]
        B = [7, 8, 9, 0]
        print("A:", A, "B:", B)
    """,
    ),
    code(
        "map-nested-comprehension",
        """
        pairs = [work(a, b) for a in A for b in B]
        print("pairs:", pairs)
    """,
    ),
    code(
        "map-nested-loops",
        """
        out = []
        for a in A:
            for b in B:
                out.append(work(b, a))
        print("out:", out)
    """,
    ),
    code(
        "use-results",
        """
        print(len(pairs), len(out), sum(pairs) + sum(out))
    """,
    ),
]

ZIP_DOTPRODUCT = [
    md(
        "intro",
        """
        # zip: a dot product

        `[work(a, b) for a, b in zip(A, B)]` pairs the i-th items of two collections; nb2cwl
        scatters it with `dotproduct`. `zip` stops at the shorter collection, and the loop
        form does the same.
    """,
    ),
    code(
        "define-work",
        '''
        def work(a, b):
            """The work for one pair."""
            v = a * b - a
            print(f"work({a}, {b}) -> {v}")
            return v
    ''',
    ),
    code(
        "make-data",
        """
        A = list(range(1, 15))
        B = [x * 3 % 7 for x in range(14)]
        C = list(range(100, 110))
        print("A:", A)
        print("B:", B)
        print("C:", C)
    """,
    ),
    code(
        "map-zip-comprehension",
        """
        dots = [work(a, b) for a, b in zip(A, B)]
        print("dots:", dots)
    """,
    ),
    code(
        "map-zip-shorter",
        """
        short = [work(a, c) for a, c in zip(A, C)]
        print("short:", short)
    """,
    ),
    code(
        "map-zip-loop",
        """
        acc = []
        for a, b in zip(B, A):
            acc.append(work(a, b) + 1)
        print("acc:", acc)
    """,
    ),
    code(
        "use-results",
        """
        print(len(dots), len(short), len(acc), sum(dots))
    """,
    ),
]

HINTED_TASKS = [
    md(
        "intro",
        """
        # Hinted tasks

        A cheap function marked `@parallel_task` (a no-op in Jupyter) is scattered anyway
        when a comprehension or loop calls it per item.
    """,
    ),
    code(
        "define-task",
        '''
        from nb2cwl import parallel_task


        @parallel_task
        def double(x):
            """Cheap on purpose: the hint says it is worth a process per chunk."""
            print(f"double({x})")
            return 2 * x
    ''',
    ),
    code(
        "make-data",
        """
        xs = list(range(15))
        print("xs:", xs)
    """,
    ),
    code(
        "map-hinted-comprehension",
        """
        doubled = [double(x) for x in xs]
        print("doubled:", doubled)
    """,
    ),
    code(
        "map-hinted-loop",
        """
        total = 0
        for x in xs:
            total += double(x) + 1
        print("total:", total)
    """,
    ),
    code(
        "use-results",
        """
        print(sum(doubled) + len(xs) == total)
    """,
    ),
]

# ---------------------------------------------------------------------------------------
# Blocking cases: each `blocked-*` cell must stay sequential, with a reason
# ---------------------------------------------------------------------------------------

BLOCKED_LOOP_CARRIED = [
    md(
        "intro",
        """
        # Blocked: a value carried from one iteration to the next

        `prev` is written by one iteration and read by the next, so the iterations cannot
        run apart: the loop stays sequential.
    """,
    ),
    WORK,
    code(
        "make-data",
        """
        xs = list(range(1, 16))
        print("xs:", xs)
    """,
    ),
    code(
        "blocked-loop-carried",
        """
        prev = 0
        out = []
        for x in xs:
            out.append(work(x) - prev)
            prev = x
        print("out:", out)
    """,
    ),
    code(
        "use-results",
        """
        print(prev, sum(out))
    """,
    ),
]

BLOCKED_SHARED_MUTATION = [
    md(
        "intro",
        """
        # Blocked: shared mutation

        Besides appending to its result, the body changes a dict that every iteration reads
        (a cache), so the loop stays sequential.
    """,
    ),
    WORK,
    code(
        "make-data",
        """
        xs = [3, 5, 3, 8, 5, 1, 8, 3, 2, 9, 1, 5]
        print("xs:", xs)
    """,
    ),
    code(
        "blocked-shared-mutation",
        """
        cache = {}
        out = []
        for x in xs:
            value = cache.setdefault(x, work(x) + len(cache))
            out.append(value)
        print("out:", out)
        print("cache:", cache)
    """,
    ),
    code(
        "use-results",
        """
        print(len(cache), sum(out))
    """,
    ),
]

BLOCKED_GLOBAL_RNG = [
    md(
        "intro",
        """
        # Blocked: the global random generator

        The body draws from the global generator of `random` or `numpy.random`: the numbers
        each item gets depend on the order of the draws, so the loops stay sequential.
    """,
    ),
    code(
        "imports",
        """
        import random

        import numpy as np

        random.seed(1234)
        np.random.seed(1234)
        print("seeded")
    """,
    ),
    WORK,
    code(
        "make-data",
        """
        xs = list(range(12))
        print("xs:", xs)
    """,
    ),
    code(
        "blocked-random",
        """
        noisy = []
        for x in xs:
            noisy.append(round(work(x) + random.random(), 6))
        print("noisy:", noisy)
    """,
    ),
    code(
        "blocked-numpy-random",
        """
        jitter = [round(work(x) * float(np.random.rand()), 6) for x in xs]
        print("jitter:", jitter)
    """,
    ),
    code(
        "use-results",
        """
        print(round(sum(noisy) + sum(jitter), 4))
    """,
    ),
]

BLOCKED_FILE_APPEND = [
    md(
        "intro",
        """
        # Blocked: appending to a file

        Every iteration appends a line to `log.txt`; the order of the lines is the order of
        the iterations, so the loop stays sequential.
    """,
    ),
    WORK,
    code(
        "make-data",
        """
        xs = list(range(5, 20))
        print("xs:", xs)
    """,
    ),
    code(
        "blocked-file-append",
        """
        out = []
        for x in xs:
            v = work(x)
            with open("log.txt", "a") as fh:
                fh.write(f"{x} {v}\\n")
            out.append(v)
        print("out:", out)
    """,
    ),
    code(
        "read-log",
        """
        with open("log.txt") as fh:
            lines = fh.read().splitlines()
        print(len(lines), lines[0], lines[-1])
    """,
    ),
]

BLOCKED_BREAK = [
    md(
        "intro",
        """
        # Blocked: break

        The loop stops at the first large value: later items must not be worked on, so the
        loop stays sequential.
    """,
    ),
    WORK,
    code(
        "make-data",
        """
        xs = list(range(1, 25))
        print("xs:", xs)
    """,
    ),
    code(
        "blocked-break",
        """
        small = []
        for x in xs:
            v = work(x)
            if v > 200:
                break
            small.append(v)
        print("small:", small)
    """,
    ),
    code(
        "use-results",
        """
        print(len(small))
    """,
    ),
]

BLOCKED_ACCUMULATOR_READ = [
    md(
        "intro",
        """
        # Blocked: the body reads its own accumulator

        `len(ys)` changes with every append, so each iteration depends on all the earlier
        ones: the loop stays sequential.
    """,
    ),
    WORK,
    code(
        "make-data",
        """
        xs = list(range(2, 14))
        print("xs:", xs)
    """,
    ),
    code(
        "blocked-accumulator-read",
        """
        ys = []
        for x in xs:
            ys.append(work(x) + len(ys))
        print("ys:", ys)
    """,
    ),
    code(
        "use-results",
        """
        print(sum(ys))
    """,
    ),
]

NOTEBOOKS = {
    "map_list_comprehension.ipynb": MAP_LIST_COMPREHENSION,
    "map_builtin_map.ipynb": MAP_BUILTIN_MAP,
    "map_dict_comprehension.ipynb": MAP_DICT_COMPREHENSION,
    "map_loop_append.ipynb": MAP_LOOP_APPEND,
    "map_enumerate_setitem.ipynb": MAP_ENUMERATE_SETITEM,
    "reduce_augassign.ipynb": REDUCE_AUGASSIGN,
    "reduce_builtins.ipynb": REDUCE_BUILTINS,
    "reduce_numpy_pandas.ipynb": REDUCE_NUMPY_PANDAS,
    "nested_product.ipynb": NESTED_PRODUCT,
    "zip_dotproduct.ipynb": ZIP_DOTPRODUCT,
    "hinted_tasks.ipynb": HINTED_TASKS,
    "blocked_loop_carried.ipynb": BLOCKED_LOOP_CARRIED,
    "blocked_shared_mutation.ipynb": BLOCKED_SHARED_MUTATION,
    "blocked_global_rng.ipynb": BLOCKED_GLOBAL_RNG,
    "blocked_file_append.ipynb": BLOCKED_FILE_APPEND,
    "blocked_break.ipynb": BLOCKED_BREAK,
    "blocked_accumulator_read.ipynb": BLOCKED_ACCUMULATOR_READ,
}


def main() -> None:
    for filename, cells in NOTEBOOKS.items():
        path = HERE / filename
        nbformat.write(build(cells), str(path))
        print(f"wrote {path.relative_to(HERE.parent.parent)}")


if __name__ == "__main__":
    main()
