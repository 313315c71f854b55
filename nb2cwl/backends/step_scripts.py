"""The generated Python script each step runs: its cells, definitions and a small launcher."""

from __future__ import annotations

import pprint

from nb2cwl.backends.naming import RUNTIME_PACKAGE
from nb2cwl.backends.parameters import runtime_spec
from nb2cwl.frontend.reader import is_script
from nb2cwl.ir.model import Step, Workflow, carries_value

_LAUNCHER = '''

def _run(argv: list) -> int:
    from {package}.{module} import {function}

    return {function}({call})


def _main() -> int:
    import os
    import sys

    argv = sys.argv[1:]
    runtime = argv[argv.index("--runtime") + 1]
    sys.path.insert(0, os.path.abspath(runtime))  # the runtime's zip (zipimport)
    if {local} and os.environ.get("NB2CWL_STEP_SERVER"):  # nb2cwl run's warm step server
        from {package}.forkclient import run_on_server

        status = run_on_server(__file__, argv)
        if status is not None:
            return status
    if sys.flags.no_site and "site" not in sys.modules:  # started with -S for the server
        import site

        site.main()
    return _run(argv)


if __name__ == "__main__":
    raise SystemExit(_main())
'''


def step_spec(workflow: Workflow, step: Step) -> dict:
    """The JSON-able description of `step` its runtime reads."""
    definitions = _visible_definitions(workflow, step)
    inputs = [{"var": i.var, "from": i.producer} for i in step.inputs
              if carries_value(i.var)]
    return {
        "step": step.name,
        "notebook": workflow.notebook_name,
        "cells": [
            {"index": c.index, "id": c.cell_id, "code": c.code,
             # IPython runs a cell from its source, as the kernel does (same file name)
             **({} if c.rewritten or c.source == c.code else {"source": c.source}),
             "execution_count": c.execution_count, "quiet": c.quiet}
            for c in step.cells
        ],
        "definitions": definitions,
        "defining_cells": _defining_cells(workflow, definitions),
        "replay": list(step.replay),
        "inputs": inputs,
        "files": file_plan(workflow, step),
        "outputs": [v for v in step.outputs if carries_value(v)],
        "groups": [list(g) for g in step.alias_groups],
        "role": step.role,
        "uncacheable": step.sees_all_files,  # may depend on files outside its inputs
        "plan": step.plan.to_json() if step.plan is not None and step.is_skeleton_part else None,
        "training": (_training_spec(workflow, step) if step.training is not None else None),
        "settings": _replayed_settings(workflow, step),
        "by_value": _data_definitions(workflow),
        "skipped_magics": list(workflow.skipped_magics),
        "parameters": runtime_spec(workflow, step.parameters),
        # a script's cells see `python script.py`'s argv and end at sys.exit(0), as there
        "program": "script" if is_script(workflow.notebook_path) else "notebook",
        **_future(workflow, step),
        **({"keep": [name for name in step.defines if name not in step.outputs]}
           if workflow.keep_values else {}),
    }


def _future(workflow: Workflow, step: Step) -> dict:
    """The `from __future__` features of earlier cells ([cell, feature]): those before the
    step hold in its cells, those up to a replayed definition's cell in that definition."""
    features = [[cell, feature] for cell, feature in workflow.future_imports
                if cell < step.cells[-1].index]
    return {"future": features} if features else {}


def _training_spec(workflow: Workflow, step: Step) -> dict:
    """The training plan, with where the notebook first imports TensorFlow: a training step
    imports it before its cells run, for its strategy; what the import prints belongs to that
    cell, and the settings its step's cells make before that point (os.environ["KERAS_BACKEND"],
    TF_CPP_MIN_LOG_LEVEL) must be made before it."""
    assert step.training is not None
    where = _first_import(workflow)
    inside = {cell.index for cell in step.cells}
    early = [{"key": s.key, "cell": s.cell_index, "code": s.code, "owners": list(s.owners),
              "requires": list(s.requires)}
             for s in workflow.settings if where is not None and s.cell_index in inside
             and tuple(int(p) for p in s.key.split(":")) < where]
    return {**step.training.to_json(), "import_cell": where[0] if where else None,
            "early_settings": early}


def _first_import(workflow: Workflow) -> tuple[int, int] | None:
    """Where the notebook first imports TensorFlow or Keras: (cell, top-level statement)."""
    import ast

    cells = sorted(workflow.code_cells().items())
    for index, cell in cells:
        try:
            tree = ast.parse(cell.code)
        except SyntaxError:
            continue
        for number, statement in enumerate(tree.body):
            for node in ast.walk(statement):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                         [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                if any(n.split(".")[0] in ("tensorflow", "keras") for n in names):
                    return index, number
    return None


def _data_definitions(workflow: Workflow) -> list[str]:
    """Functions and classes some step hands on as values (a class whose attribute a method
    changed, a function that filled its default): pickled with their state, never by name."""
    defined = {name for replay in workflow.replays for name in replay.names}
    handed = {var for step in workflow.steps for var in step.outputs}
    return sorted(defined & handed)


def _replayed_settings(workflow: Workflow, step: Step) -> list[dict]:
    """Settings of earlier cells outside the step, replayed before the cells that follow."""
    inside = {cell.index for cell in step.cells}
    last = step.cells[-1].index
    return [{"key": s.key, "cell": s.cell_index, "shown": workflow.shown_cells([s.cell_index]),
             "code": s.code, "owners": list(s.owners), "requires": list(s.requires)}
            for s in workflow.settings if s.cell_index < last and s.cell_index not in inside]


def file_plan(workflow: Workflow, step: Step) -> list[dict]:
    """Files to stage before the step runs, in the order they were written.

    Files beside the notebook come first, then the files of earlier steps in notebook order;
    each entry names the paths to take, or none for all of that step's files.
    """
    external = workflow.external_numbers
    plan: list[dict] = [
        {"path": i.var[len("file:"):], "external": external[i.var[len("file:"):]]}
        for i in step.inputs if i.var.startswith("file:") and i.producer is None
        and i.var != "file:*"
    ]
    wanted: dict[str, set[str] | None] = {}
    for item in step.inputs:
        if not item.var.startswith("file:") or item.producer is None:
            continue
        if item.var == "file:*":
            wanted[item.producer] = None
        elif item.producer not in wanted:
            wanted[item.producer] = {item.var[len("file:"):]}
        elif wanted[item.producer] is not None:
            wanted[item.producer].add(item.var[len("file:"):])  # type: ignore[union-attr]
    if step.sees_all_files:
        for producer in file_producers(workflow, step):
            wanted[producer] = None
    steps = workflow.steps_by_name
    for producer in sorted(wanted, key=lambda name: steps[name].first_cell
                           if name in steps else 0):
        paths = wanted[producer]
        plan.append({"from": producer, "paths": None if paths is None else sorted(paths)})
    return plan


def file_producers(workflow: Workflow, step: Step) -> list[str]:
    """Earlier steps that write files, in notebook order (for steps that may read any file)."""
    return [s.name for s in workflow.steps
            if s.writes_files and s.first_cell < step.cells[-1].index and s.name != step.name]


def _visible_definitions(workflow: Workflow, step: Step) -> list[dict]:
    """The definitions of the step's cells and those before them: what it may replay, and
    what it pickles by name (a later step replays the class an instance needs, so an enum
    member made in the same cell as its class stays that class's member)."""
    last = step.cells[-1].index
    return [
        {"key": r.key, "cell": r.cell_index, "names": list(r.names), "code": r.code,
         "requires": list(r.requires), **({"parameter": r.parameter} if r.parameter else {}),
         **({"line": r.line} if r.line is not None else {})}
        for r in workflow.replays
        if r.cell_index <= last or r.key in step.replay
    ]


def _defining_cells(workflow: Workflow, definitions: list[dict]) -> dict[int, list]:
    """{cell: [source, execution count]} of the cells whose definitions the step may replay as
    written: the kernel named their code after the source (and counted them), so does the
    step (a warning or traceback from a replayed function names the cell's file and line)."""
    wanted = {d["cell"] for d in definitions if "line" in d}
    return {index: [c.source, c.execution_count]
            for index, c in workflow.code_cells().items() if index in wanted}


def step_script(workflow: Workflow, step: Step, local: bool = False) -> str:
    """The Python source of `step`'s script; `local`: it runs on the local deployment, where
    `nb2cwl run` may start it from a warm step server (runtime/forkserver.py)."""
    cells = ", ".join(str(c.index) for c in step.cells)
    header = (
        f'"""nb2cwl step {step.name}: {workflow.notebook_name}, cell(s) {cells}.\n\n'
        "Generated by nb2cwl; edit the notebook and compile again instead of this file.\n"
        '"""\n\n'
    )
    spec = pprint.pformat(step_spec(workflow, step), width=100, sort_dicts=False)
    body = f"SPEC = {spec}\n"
    launcher = _LAUNCHER.format(package=RUNTIME_PACKAGE, module="step", function="run_step",
                                call="SPEC, argv", local=local)
    return header + body + launcher


def assemble_script(workflow: Workflow, local: bool = False) -> str:
    """The Python source of the step that assembles the executed notebook."""
    header = (
        f'"""nb2cwl: assemble the executed notebook of {workflow.notebook_name}.\n\n'
        "Generated by nb2cwl.\n"
        '"""\n\n'
    )
    run = {c.index for step in workflow.steps for c in step.cells}
    spec = {"parameters": runtime_spec(workflow, tuple(p.name for p in workflow.parameters)),
            # cells no step runs (only definitions or comments): numbered, as Jupyter does
            "unrun_counts": {c.index: c.execution_count for c in workflow.quiet_cells
                             if c.index not in run and c.execution_count is not None}}
    body = f"SPEC = {pprint.pformat(spec, width=100, sort_dicts=False)}\n"
    launcher = _LAUNCHER.format(package=RUNTIME_PACKAGE, module="assemble",
                                function="assemble", call="argv, SPEC", local=local)
    return header + body + launcher
