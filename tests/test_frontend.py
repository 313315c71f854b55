"""Unit tests of the front end: reading, validating and converting notebooks, and directives."""

from __future__ import annotations

import json

import nbformat
import pytest

from nb2cwl.errors import CellSyntaxError, DirectiveError, Nb2CwlError, NotebookFormatError
from nb2cwl.frontend.directives import CellDirectives, read_directives
from nb2cwl.frontend.model import Cell, Notebook
from nb2cwl.frontend.reader import read_notebook

KERNELSPEC = {"name": "python3", "language": "python", "display_name": "Python 3"}
NB_NAME = "nb.ipynb"


def make_notebook(tmp_path, cells, markdown_first=False, metadata=None, name=NB_NAME):
    """Write a notebook whose code cells hold `cells` and return its path.

    An item of `cells` may be a string (a code cell) or an nbformat cell node (used as is).
    """
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    if metadata:
        nb.metadata.update(metadata)
    items = []
    if markdown_first:
        items.append(nbformat.v4.new_markdown_cell("# Title"))
    for cell in cells:
        items.append(nbformat.v4.new_code_cell(cell) if isinstance(cell, str) else cell)
    nb.cells = items
    path = tmp_path / name
    nbformat.write(nb, str(path))
    return str(path)


def notebook_json(cells=("x = 1",)):
    """A valid nbformat 4 notebook as plain JSON data, to be broken by a test."""
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(c) for c in cells], metadata={"kernelspec": KERNELSPEC}
    )
    return json.loads(nbformat.writes(nb))


def write_raw(tmp_path, content, name=NB_NAME):
    """Write `content` (str, bytes or JSON data) to a file and return its path."""
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_text(json.dumps(content), encoding="utf-8")
    return str(path)


def read_error(path, kind=NotebookFormatError):
    """Read `path`, expecting `kind`; return the exception."""
    with pytest.raises(kind) as info:
        read_notebook(path)
    return info.value


def assert_notebook_level(error, name=NB_NAME):
    """A file-level error: it names the notebook and no cell."""
    assert isinstance(error, Nb2CwlError)
    assert error.location is not None
    assert error.location.notebook == name
    assert error.location.cell_index is None
    assert error.location.line is None


# --- reading a valid notebook --------------------------------------------------------------


def test_reads_cells_in_order_with_indices_counting_markdown(tmp_path):
    path = make_notebook(tmp_path, ["x = 1", "y = x + 1"], markdown_first=True)
    nb = read_notebook(path)
    assert isinstance(nb, Notebook)
    assert nb.name == NB_NAME
    assert [c.index for c in nb.cells] == [0, 1, 2]
    assert [c.cell_type for c in nb.cells] == ["markdown", "code", "code"]
    assert [c.index for c in nb.code_cells] == [1, 2]
    assert nb.cells[1].code.strip() == "x = 1"
    assert nb.cells[2].source == "y = x + 1"
    assert nb.cells[0].code == ""
    assert all(isinstance(c, Cell) for c in nb.cells)
    assert len({c.cell_id for c in nb.cells}) == 3


def test_notebook_without_kernelspec_is_python(tmp_path):
    data = notebook_json()
    data["metadata"] = {}
    nb = read_notebook(write_raw(tmp_path, data))
    assert [c.index for c in nb.code_cells] == [0]


def test_source_given_as_list_of_lines_is_joined(tmp_path):
    data = notebook_json()
    data["cells"][0]["source"] = ["a = 1\n", "b = a + 1\n"]
    nb = read_notebook(write_raw(tmp_path, data))
    assert nb.cells[0].source == "a = 1\nb = a + 1\n"


# --- files that are not (readable, valid, Python) notebooks --------------------------------


def test_missing_file(tmp_path):
    error = read_error(str(tmp_path / NB_NAME))
    assert_notebook_level(error)


def test_invalid_json(tmp_path):
    error = read_error(write_raw(tmp_path, '{"cells": [1, 2,'))
    assert error.code == "notebook-format"
    assert_notebook_level(error)


def test_empty_file(tmp_path):
    error = read_error(write_raw(tmp_path, b""))
    assert_notebook_level(error)


def test_binary_garbage(tmp_path):
    error = read_error(write_raw(tmp_path, b"\x89PNG\r\n\x1a\n\x00\xff\xfe\x00garbage"))
    assert_notebook_level(error)


@pytest.mark.parametrize("content", ['{"a": 1}', "[1, 2, 3]", '"a string"', "42", "null"])
def test_valid_json_that_is_not_a_notebook(tmp_path, content):
    error = read_error(write_raw(tmp_path, content))
    assert_notebook_level(error)


@pytest.mark.parametrize("version", [3, 5, None, "4"])
def test_unsupported_or_missing_nbformat_version(tmp_path, version):
    data = notebook_json()
    if version is None:
        del data["nbformat"]
    else:
        data["nbformat"] = version
    error = read_error(write_raw(tmp_path, data))
    assert_notebook_level(error)


def test_nbformat_3_notebook_with_worksheets(tmp_path):
    data = {
        "nbformat": 3,
        "nbformat_minor": 0,
        "metadata": {"name": "old"},
        "worksheets": [{"cells": [{"cell_type": "code", "input": "x = 1", "outputs": []}]}],
    }
    error = read_error(write_raw(tmp_path, data))
    assert_notebook_level(error)


def test_cell_missing_source_is_schema_invalid(tmp_path):
    data = notebook_json(["x = 1", "y = 2"])
    del data["cells"][1]["source"]
    error = read_error(write_raw(tmp_path, data))
    assert_notebook_level(error)


def test_cell_with_unknown_type_is_schema_invalid(tmp_path):
    data = notebook_json()
    data["cells"][0]["cell_type"] = "sql"
    error = read_error(write_raw(tmp_path, data))
    assert_notebook_level(error)


def test_cells_not_a_list_is_schema_invalid(tmp_path):
    data = notebook_json()
    data["cells"] = {"0": data["cells"][0]}
    error = read_error(write_raw(tmp_path, data))
    assert_notebook_level(error)


@pytest.mark.parametrize(
    "metadata",
    [
        {"kernelspec": {"name": "ir", "language": "R", "display_name": "R"}},
        {"kernelspec": {"name": "julia-1.9", "language": "julia", "display_name": "Julia"}},
        {"language_info": {"name": "R"}},
    ],
)
def test_non_python_kernel(tmp_path, metadata):
    data = notebook_json()
    data["metadata"] = metadata
    error = read_error(write_raw(tmp_path, data))
    assert_notebook_level(error)


def test_python_language_is_case_insensitive(tmp_path):
    data = notebook_json()
    data["metadata"]["kernelspec"]["language"] = "Python"
    nb = read_notebook(write_raw(tmp_path, data))
    assert len(nb.code_cells) == 1


def test_empty_notebook(tmp_path):
    data = notebook_json()
    data["cells"] = []
    error = read_error(write_raw(tmp_path, data))
    assert_notebook_level(error)


def test_notebook_with_only_markdown(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.cells = [nbformat.v4.new_markdown_cell("# A"), nbformat.v4.new_markdown_cell("text")]
    path = tmp_path / NB_NAME
    nbformat.write(nb, str(path))
    error = read_error(str(path))
    assert_notebook_level(error)


def test_notebook_with_only_empty_code_cells(tmp_path):
    path = make_notebook(tmp_path, ["", "   \n\n", "\t"], markdown_first=True)
    error = read_error(path)
    assert_notebook_level(error)


def test_error_location_uses_the_file_name(tmp_path):
    error = read_error(write_raw(tmp_path, "not json", name="analysis.ipynb"))
    assert_notebook_level(error, name="analysis.ipynb")


# --- syntax errors -------------------------------------------------------------------------


def test_syntax_error_names_cell_and_line(tmp_path):
    cells = ["x = 1", "y = 2", "z = 3", "a = 1\nb = 2\nc = (\nd = 4"]
    error = read_error(make_notebook(tmp_path, cells), CellSyntaxError)
    assert error.code == "syntax-error"
    assert error.location.notebook == NB_NAME
    assert error.location.cell_index == 3
    assert error.location.line == 3


def test_syntax_error_cell_index_counts_markdown_cells(tmp_path):
    cells = ["x = 1", "y = 2", "if x\n    pass"]
    error = read_error(make_notebook(tmp_path, cells, markdown_first=True), CellSyntaxError)
    assert error.location.cell_index == 3
    assert error.location.line == 1


def test_syntax_error_carries_cell_id(tmp_path):
    cell = nbformat.v4.new_code_cell("x = = 1")
    cell["id"] = "my-cell"
    error = read_error(make_notebook(tmp_path, ["a = 1", cell]), CellSyntaxError)
    assert error.location.cell_index == 1
    assert error.location.cell_id == "my-cell"
    assert error.location.line == 1


def test_syntax_error_line_after_a_magic(tmp_path):
    error = read_error(
        make_notebook(tmp_path, ["%matplotlib inline\nx = 1\ny = (\n"]), CellSyntaxError
    )
    assert error.location.cell_index == 0
    assert error.location.line == 3


def test_bad_indentation_is_a_cell_syntax_error(tmp_path):
    error = read_error(
        make_notebook(tmp_path, ["x = 1", "def f():\n    return 1\n  x = 2"]), CellSyntaxError
    )
    assert error.location.cell_index == 1
    assert error.location.line == 3


def test_first_syntax_error_wins(tmp_path):
    error = read_error(make_notebook(tmp_path, ["x = 1", "x = (", "y = )"]), CellSyntaxError)
    assert error.location.cell_index == 1


def test_syntax_error_in_markdown_is_ignored(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.cells = [nbformat.v4.new_markdown_cell("x = ("), nbformat.v4.new_code_cell("x = 1")]
    path = tmp_path / NB_NAME
    nbformat.write(nb, str(path))
    assert [c.index for c in read_notebook(str(path)).code_cells] == [1]


# --- magics --------------------------------------------------------------------------------


def test_supported_magics_are_converted(tmp_path):
    cells = ["%matplotlib inline\nx = 1", "!ls -l", "%%writefile f.txt\nhello\n", "y = !ls"]
    nb = read_notebook(make_notebook(tmp_path, cells))
    first, shell, writefile, capture = nb.cells

    assert [(m.kind, m.name, m.argument, m.line) for m in first.magics] == [
        ("line", "matplotlib", "inline", 1)
    ]
    assert "get_ipython()" in first.code and "run_line_magic" in first.code
    assert "x = 1" in first.code

    assert [(m.kind, m.name, m.argument) for m in shell.magics] == [("shell", "system", "ls -l")]
    assert "get_ipython().system" in shell.code

    assert [(m.kind, m.name, m.argument) for m in writefile.magics] == [
        ("cell", "writefile", "f.txt")
    ]
    assert "run_cell_magic" in writefile.code

    assert [(m.kind, m.name, m.argument) for m in capture.magics] == [("shell", "getoutput", "ls")]
    assert capture.code.strip().startswith("y = get_ipython().getoutput")


def test_source_keeps_the_magic_and_code_is_python(tmp_path):
    nb = read_notebook(make_notebook(tmp_path, ["%load_ext autoreload\n%autoreload 2"]))
    cell = nb.cells[0]
    assert cell.source.startswith("%load_ext")
    assert "%" not in cell.code
    assert [(m.name, m.line) for m in cell.magics] == [("load_ext", 1), ("autoreload", 2)]


def test_cell_without_magics_has_none(tmp_path):
    nb = read_notebook(make_notebook(tmp_path, ["x = 1\nprint(x)"]))
    assert nb.cells[0].magics == ()
    assert "get_ipython" not in nb.cells[0].code


@pytest.mark.parametrize(
    ("cells", "cell_index", "name", "line"),
    [
        (["x = 1\n%debug"], 0, "debug", 2),
        (["x = 1", "%%timeit\nx + 1"], 1, "timeit", 1),
        (["x = 1\ny = 2\n%prun x"], 0, "prun", 3),
        (["x = [\n    1,\n    2,\n]\n%time x"], 0, "time", 5),
        (["a = 1", "b = 2", "for i in range(3):\n    %debug\n    pass"], 2, "debug", 2),
        (["%%capture out\nprint(1)"], 0, "capture", 1),
        (["%tensorboard --logdir logs"], 0, "tensorboard", 1),
        (["%my_own_magic 1 2"], 0, "my_own_magic", 1),
    ],
)
def test_every_magic_is_accepted_and_found_at_its_line(tmp_path, cells, cell_index, name, line):
    """A step runs magics with IPython's own shell; the analysis decides what each does."""
    nb = read_notebook(make_notebook(tmp_path, cells))
    (magic,) = nb.cells[cell_index].magics
    assert (magic.name, magic.line) == (name, line)


def test_pip_magic_is_accepted(tmp_path):
    nb = read_notebook(make_notebook(tmp_path, ["%pip install numpy\nimport numpy"]))
    assert [(m.kind, m.name) for m in nb.cells[0].magics] == [("line", "pip")]


# --- directives ----------------------------------------------------------------------------


def code_cell(source="x = 1", tags=None, workflow=None, **metadata):
    """An nbformat code cell with tags and Jupyter-Workflow metadata."""
    cell = nbformat.v4.new_code_cell(source)
    if tags is not None:
        cell.metadata["tags"] = tags
    if workflow is not None:
        cell.metadata["workflow"] = workflow
    cell.metadata.update(metadata)
    return cell


def directives_of(tmp_path, *cells):
    """The CellDirectives of every code cell of a notebook made of `cells`."""
    nb = read_notebook(make_notebook(tmp_path, list(cells)))
    return [read_directives(c, nb.name) for c in nb.code_cells]


def directive_error(tmp_path, *cells):
    """The DirectiveError reading the directives of `cells` raises."""
    nb = read_notebook(make_notebook(tmp_path, list(cells)))
    with pytest.raises(DirectiveError) as info:
        for cell in nb.code_cells:
            read_directives(cell, nb.name)
    assert info.value.code == "directive"
    return info.value


def test_no_directives_gives_defaults(tmp_path):
    (found,) = directives_of(tmp_path, code_cell())
    assert found == CellDirectives()
    assert found.autoin is True
    assert not found.skip
    assert found.step_name is None


def test_tags_are_read_into_cells(tmp_path):
    nb = read_notebook(make_notebook(tmp_path, [code_cell(tags=["nb2cwl:skip", "other"])]))
    assert nb.cells[0].tags == ("nb2cwl:skip", "other")


def test_skip_tag(tmp_path):
    skipped, kept = directives_of(tmp_path, code_cell(tags=["nb2cwl:skip"]), code_cell())
    assert skipped.skip
    assert not kept.skip


def test_step_tag(tmp_path):
    (found,) = directives_of(tmp_path, code_cell(tags=["nb2cwl:step=train"]))
    assert found.step_name == "train"
    assert not found.skip


def test_step_tags_naming_the_same_step_are_fine(tmp_path):
    (found,) = directives_of(tmp_path, code_cell(tags=["nb2cwl:step=a", "nb2cwl:step= a"]))
    assert found.step_name == "a"


def test_two_step_names_on_one_cell(tmp_path):
    error = directive_error(
        tmp_path, code_cell(), code_cell(tags=["nb2cwl:step=a", "nb2cwl:step=b"])
    )
    assert error.location.cell_index == 1


def test_empty_step_name(tmp_path):
    error = directive_error(tmp_path, code_cell(tags=["nb2cwl:step="]))
    assert error.location.cell_index == 0


def test_jupyter_workflow_metadata(tmp_path):
    workflow = {
        "step": {
            "in": [
                "a",
                {"name": "b", "type": "name"},
                {"name": "data", "type": "file", "value": "data.csv"},
                {"name": "xs", "type": "name", "scatter": {}},
            ],
            "out": ["c", {"name": "d", "type": "name"}],
            "autoin": False,
        },
        "target": {"deployment": "hpc", "locations": 2},
    }
    (found,) = directives_of(tmp_path, code_cell(workflow=workflow))
    assert found.declared_in == ("a", "b", "xs")
    assert found.declared_in_files == ("data.csv",)
    assert found.declared_out == ("c", "d")
    assert found.autoin is False
    assert found.scatter == ("xs",)
    assert found.target == "hpc"


def test_workflow_metadata_defaults(tmp_path):
    (found,) = directives_of(tmp_path, code_cell(workflow={"step": {"in": ["a"]}}))
    assert found.declared_in == ("a",)
    assert found.declared_out == ()
    assert found.autoin is True
    assert found.target is None


def test_workflow_target_model_name(tmp_path):
    workflow = {"target": {"model": {"name": "cluster", "type": "slurm"}}}
    (found,) = directives_of(tmp_path, code_cell(workflow=workflow))
    assert found.target == "cluster"


def test_tags_and_workflow_metadata_together(tmp_path):
    cell = code_cell(tags=["nb2cwl:step=prep"], workflow={"step": {"out": ["df"]}})
    (found,) = directives_of(tmp_path, cell)
    assert found.step_name == "prep"
    assert found.declared_out == ("df",)


@pytest.mark.parametrize(
    "workflow",
    [
        "not an object",
        ["a"],
        {"step": "x"},
        {"step": {"in": "a"}},
        {"step": {"out": {"name": "a"}}},
        {"step": {"in": [3]}},
        {"step": {"in": [{"name": 3}]}},
        {"step": {"in": [{"name": "a", "type": "bogus"}]}},
        {"step": {"autoin": "yes"}},
        {"target": "hpc"},
        {"target": {}},
        {"target": {"deployment": ""}},
        {"target": {"model": {"type": "slurm"}}},
    ],
)
def test_malformed_workflow_metadata(tmp_path, workflow):
    error = directive_error(tmp_path, code_cell(), code_cell(), code_cell(workflow=workflow))
    assert error.location.notebook == NB_NAME
    assert error.location.cell_index == 2


def test_directive_error_cell_index_counts_markdown(tmp_path):
    nb = read_notebook(
        make_notebook(tmp_path, [code_cell(workflow={"step": ["a"]})], markdown_first=True)
    )
    with pytest.raises(DirectiveError) as info:
        read_directives(nb.code_cells[0], nb.name)
    assert info.value.location.cell_index == 1
