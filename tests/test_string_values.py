"""Paths built from loop variables and lists of them (analysis/string_values.py): the files a
cell reads and writes are named, not "a path the analysis cannot resolve"; and where the code
may make another string, the path stays unresolved."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_analysis import effects, flow, inputs, make_notebook

WRITE_PARTS = ("import pandas as pd\npaths = []\nfor i in range(3):\n"
               "    path = f'part{i}.csv'\n"
               "    pd.DataFrame({'a': [i, i + 1]}).to_csv(path, index=False)\n"
               "    paths.append(path)")
READ_PARTS = ("totals = {}\nfor path in paths:\n    frame = pd.read_csv(path)\n"
              "    totals[path] = int(frame['a'].sum())\nprint(totals)")
PARTS = {"part0.csv", "part1.csv", "part2.csv"}


def test_a_function_reads_a_constant_global(tmp_path):
    df = flow(tmp_path, ['DATA = "train.csv"\ndef load():\n    return open(DATA).read()',
                         "print(load())"])
    assert effects(df, 1).file_reads == {"train.csv"} and not effects(df, 1).opaque_reads


def test_files_named_by_a_loop_and_read_back_from_a_list(tmp_path):
    df = flow(tmp_path, [WRITE_PARTS, READ_PARTS])
    assert effects(df, 0).file_writes == PARTS and not effects(df, 0).opaque_io
    assert effects(df, 1).file_reads == PARTS and not effects(df, 1).opaque_reads
    assert {(f"file:{name}", 0) for name in PARTS} <= inputs(df, 1)


@pytest.mark.parametrize(("cells", "files"), [
    (['paths = [f"part{i}.csv" for i in range(3) if i != 1]',
      "for p in paths:\n    print(open(p).read())"], {"part0.csv", "part1.csv", "part2.csv"}),
    (["import os\nfor name in ['a', 'b']:\n    print(open(os.path.join('data', f'{name}.txt'))"
      ".read())"], {"data/a.txt", "data/b.txt"}),
    (["from pathlib import Path\nfor n in (1, 2):\n    print((Path('out') / f'n{n!r}.txt')"
      ".read_text())"], {"out/n1.txt", "out/n2.txt"}),
    (["for i in range(2):\n    pass", "print(open(f'p{i}.txt').read())"], {"p0.txt", "p1.txt"}),
])
def test_paths_from_known_loops(tmp_path, cells, files):
    df = flow(tmp_path, cells)
    last = len(cells) - 1
    assert effects(df, last).file_reads == files
    assert not effects(df, last).opaque_reads


@pytest.mark.parametrize("cells", [
    # the list may hold other strings from here on
    ["paths = ['a.txt']", "paths.extend(more)", "for p in paths:\n    open(p).read()"],
    ["paths = ['a.txt']", "paths = paths + more", "for p in paths:\n    open(p).read()"],
    ["paths = ['a.txt']", "paths.append(pick())", "for p in paths:\n    open(p).read()"],
    ["paths = ['a.txt']", "paths[0] = pick()", "for p in paths:\n    open(p).read()"],
    ["paths = ['a.txt']", "alias = paths\nalias.append(pick())",
     "for p in paths:\n    open(p).read()"],
    ["paths = ['a.txt']", "def add(xs):\n    xs.append(pick())", "add(paths)",
     "for p in paths:\n    open(p).read()"],
    ["paths = ['a.txt']", "def add():\n    paths.append(pick())", "add()",
     "for p in paths:\n    open(p).read()"],
    ["paths = ['a.txt']", "def reset():\n    global paths\n    paths = [pick()]", "reset()",
     "for p in paths:\n    open(p).read()"],
    ["path = 'a.txt'", "def move():\n    global path\n    path = pick()", "move()",
     "open(path).read()"],
    # a format the analysis does not apply, a value it does not know, too many names
    ["for i in range(3):\n    open(f'part{i:02d}.csv').read()"],
    ["for i in range(n):\n    open(f'part{i}.csv').read()"],
    ["for i in range(1000):\n    open(f'part{i}.csv').read()"],
    ["path = pick()", "for i in range(3):\n    if i:\n        path = f'p{i}.txt'\n"
     "    open(path).read()"],
])
def test_a_path_that_may_be_another_string_stays_unresolved(tmp_path, cells):
    df = flow(tmp_path, cells)
    assert effects(df, len(cells) - 1).opaque_reads, effects(df, len(cells) - 1).file_reads


@pytest.mark.parametrize(("cells", "read"), [
    # the body is walked once: what an earlier iteration left
    (['paths = ["a.csv"]', 'for p in paths:\n    open(p).read()\n    if p == "a.csv":\n'
      '        paths.append("b.csv")'], "b.csv"),
    (['paths = []\np = "a.csv"', 'for i in range(2):\n    paths.append(p)\n'
      '    p = f"b{i}.csv"', "for q in paths:\n    open(q).read()"], "b0.csv"),
    (['path = "a.csv"', 'for i in range(3):\n    open(path).read()\n'
      '    path = f"part{i}.csv"'], "part0.csv"),
    (['path = "a.csv"\ni = 0', 'while i < 3:\n    open(path).read()\n'
      '    path = f"part{i}.csv"\n    i += 1'], "part0.csv"),
    # a function's, a comprehension's or a lambda's own names are not the globals
    (["for i in range(2):\n    pass", 'def read_all(n):\n    for i in range(n):\n'
      '        open(f"p{i}.txt").read()', "read_all(5)"], "p4.txt"),
    (["for i in range(2):\n    pass", 'def read(i):\n    return open(f"p{i}.txt").read()',
      "read(7)"], "p7.txt"),
    (["for i in range(2):\n    pass", '[open(f"p{i}.txt").read() for i in range(5)]'],
     "p4.txt"),
    (["for i in range(2):\n    pass", 'f = lambda i: open(f"p{i}.txt").read()', "f(7)"],
     "p7.txt"),
    (['path = "a.csv"', "def load(name):\n    path = name\n    return open(path).read()",
      'load("b.csv")'], "b.csv"),
    # bound where the analysis does not see it
    (['def setup():\n    global path\n    path = "secret.csv"', "setup()",
      'for i in range(2):\n    if i == 1:\n        path = f"part{i}.csv"\n'
      '    open(path).read()'], "secret.csv"),
    (["from config import *", 'for i in range(2):\n    if i == 1:\n'
      '        path = f"part{i}.csv"\n    open(path).read()'], "secret.csv"),
    (['globals()["path"] = "secret.csv"', 'for i in range(2):\n    if i == 1:\n'
      '        path = f"part{i}.csv"\n    open(path).read()'], "secret.csv"),
    (['def setup():\n    global i\n    i = 7', "setup()", "for i in []:\n    pass",
      'open(f"p{i}.txt").read()'], "p7.txt"),
    # a loop over a string binds its characters; a swap; an unseen change
    (['for ch in "ab":\n    open(ch).read()'], "a"),
    (['a = "x.csv"\nb = "y.csv"', "a, b = b, a", "open(b).read()"], "x.csv"),
    (['paths = ["a.txt"]', "list.append(paths, pick())", "for p in paths:\n    open(p).read()"],
     "?"),
    (['import os', 'open(os.path.join("data", "/abs")).read()'], "/abs"),
    # a second review: a comprehension's own name, bound inside it or appended from it
    (['paths = []\nname = "a"', '[paths.append(name + ".csv") for name in ["x", "y"]]',
      "for p in paths:\n    open(p).read()"], "x.csv"),
    (["for i in range(1):\n    pass", '[(path := f"p{i}.csv") for i in range(3)]',
      "open(path).read()"], "p2.csv"),
    # what a path is
    (['def Path(x):\n    return x + ".csv"', 'open(Path("a")).read()'], "a.csv"),
    (["from pathlib import Path", 'open(Path("out") / "/tmp/x.csv").read()'], "/tmp/x.csv"),
    (["from pathlib import Path", "open(f\"{Path('data/')}_v2.csv\").read()"], "data_v2.csv"),
    (["from pathlib import Path", 'Path("a.csv").with_suffix(".txt").read_text()'], "a.txt"),
    (["from pathlib import Path", 'Path("a").joinpath("b.csv").read_text()'], "a/b.csv"),
    (["from pathlib import Path", 'Path("dir", "x.csv").read_text()'], "dir/x.csv"),
    # a list changed where its name is not written literally
    (['paths = ["a.csv"]\ndef add():\n    paths.append("z.csv")',
      'for p in paths:\n    open(p).read()\n    if p == "z.csv":\n        break\n    add()'],
     "z.csv"),
    (['paths = ["a.csv"]\nq = paths', "for p in paths:\n    open(p).read()\n"
      '    if p == "a.csv":\n        q.append("z.csv")'], "z.csv"),
    (['paths = ["x.csv"]\nadd = paths.append', 'add("y.csv")',
      "for p in paths:\n    open(p).read()"], "y.csv"),
    (['paths = ["x.csv"]', 'list(map(paths.append, ["y.csv"]))',
      "for p in paths:\n    open(p).read()"], "y.csv"),
    (['paths = ["x.csv"]', '(q := paths).append("z.csv")',
      "for p in paths:\n    open(p).read()"], "z.csv"),
    (['paths = ["x.csv"]', 'class C:\n    paths.append("z.csv")',
      "for p in paths:\n    open(p).read()"], "z.csv"),
    (['paths = ["x.csv"]', '%time paths.extend(["z.csv"])',
      "for p in paths:\n    open(p).read()"], "z.csv"),
    # a global rebound by a call in the loop, by code the analysis cannot read, or by the
    # function that reads it
    (['x = "a.csv"\ndef g():\n    global x\n    x = "b.csv"',
      "for i in range(2):\n    open(x).read()\n    g()"], "b.csv"),
    (['path = "a.csv"', "exec(\"path = 'b.csv'\")", "open(path).read()"], "b.csv"),
    (["path = 'a.csv'\nexec(\"path = 'b.csv'\")\nopen(path).read()"], "b.csv"),
    (['path = "a.csv"', 'globals()["path"] = "b.csv"', "open(path).read()"], "b.csv"),
    (['path = "a.csv"', "%store -r path", "open(path).read()"], "b.csv"),
    (['digits = "a.csv"', "from string import *", "open(digits).read()"], "0123456789"),
    (['path = "a.csv"\ndef f():\n    global path\n    path = "b.csv"\n'
      "    return open(path).read()", "f()"], "b.csv"),
    # a function reads a global when it is called
    (['name = "a.csv"\ndef load():\n    return open(name).read()', 'name = "b.csv"', "load()"],
     "b.csv"),
    # a third review: calls in a loop that may rebind a global, IPython's namespace
    (['class C:\n    def m(self):\n        global x\n        x = "b.csv"', 'c = C()\nx = "a.csv"',
      "for i in range(2):\n    open(x).read()\n    c.m()"], "b.csv"),
    (['def h():\n    global x\n    x = "b.csv"', 'k = h\nx = "a.csv"',
      "for i in range(2):\n    open(x).read()\n    k()"], "b.csv"),
    (['x = "a.csv"', 'for i in range(2):\n    open(x).read()\n    %time x = "b.csv"'],
     "b.csv"),
    (['y = "a.csv"', "x = y", "def f():\n    return open(x).read()", 'y = "b.csv"',
      "%rerun 2", "f()"], "b.csv"),
    (['x = "a.csv"', 'get_ipython().user_ns["x"] = "b.csv"', "open(x).read()"], "b.csv"),
    (['xs = ["a.csv"]', 'import builtins\nbuiltins.print = lambda v: v.append("b.csv")',
      "print(xs)", "for x in xs:\n    open(x).read()"], "b.csv"),
    (['xs = ["a.csv"]', 'g = (xs.append("b.csv") for _ in range(1))', 'xs = ["c.csv"]',
      "list(g)", "for x in xs:\n    open(x).read()"], "b.csv"),
    # a generator expression runs when consumed
    (['name = "a.csv"\ngen = (open(name).read() for _ in range(1))', 'name = "b.csv"',
      "list(gen)"], "b.csv"),
    (["for i in range(2):\n    pass", 'gen = (open(f"p{i}.csv").read() for _ in range(1))',
      "i = 7\nlist(gen)"], "p7.csv"),
])
def test_a_path_is_every_string_it_may_be_or_unresolved(tmp_path, cells, read):
    """Never fewer names than the code may use: else a step misses its file."""
    df = flow(tmp_path, cells)
    found = [effects(df, index) for index in range(len(cells))]
    reads = set().union(*(f.file_reads for f in found))
    assert any(f.opaque_reads for f in found) or read in reads, reads


@pytest.mark.streamflow
def test_a_per_file_notebook_runs_as_in_jupyter_without_a_warning(tmp_path):
    from equivalence import run_with_nbclient, run_with_workflow

    source = Path(make_notebook(tmp_path, [WRITE_PARTS, READ_PARTS]))
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep
               + os.environ["PATH"])
    compiled = subprocess.run([sys.executable, "-m", "nb2cwl", str(source), "-o",
                               str(tmp_path / "compiled")], capture_output=True, text=True,
                              env=env)
    assert compiled.returncode == 0, compiled.stderr
    assert "unresolved-io" not in compiled.stderr, compiled.stderr
    ours, results = run_with_workflow(source, tmp_path / "workflow")
    assert ours == run_with_nbclient(source, tmp_path / "kernel")
    assert ours[1] == ["stdout: {'part0.csv': 1, 'part1.csv': 3, 'part2.csv': 5}\n"]
    assert sorted(p.name for p in (results / "written-files").iterdir()) == sorted(PARTS)
