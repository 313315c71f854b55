"""Prepare training steps for a tf.distribute strategy (the step runtime picks the strategy).

Keras `fit` needs no change to the code: the runtime builds or loads the model inside
`strategy.scope()` and Keras splits each batch across the replicas. A custom GradientTape loop
is rewritten in the step's generated code (never in the notebook), keeping every line where it
was so tracebacks still point at the user's lines:

- the loop's dataset becomes `__nb2cwl_training__.distribute(ds)`
  (`strategy.experimental_distribute_dataset`);
- each call of the step function `f(x, y)` becomes `__nb2cwl_training__.run(f, x, y)`
  (`strategy.run`, then `strategy.reduce`/`gather` of what it returns);
- in `f`, `tape.gradient(loss, ...)` becomes
  `__nb2cwl_training__.scale_gradients(tape.gradient(loss, ...))`: the optimizer sums the
  replicas' gradients, so each replica's are divided by the replica count, which gives the
  single-device gradient when the loss is a mean over the batch.

When any of this cannot be proved safe the step keeps the code as written and runs on the
default (one-device) strategy, and the step's reasons say why.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from nb2cwl.ir.model import CellCode, Step, TrainingPlan, Workflow

HELPER = "__nb2cwl_training__"


def prepare_training(workflow: Workflow, scale_learning_rate: bool = False) -> Workflow:
    """Rewrite the custom loops of training steps; record why a step stays on one device."""
    steps = []
    for step in workflow.steps:
        if step.training is not None:
            step = _prepare(workflow, step, scale_learning_rate)
        steps.append(step)
    return replace(workflow, steps=tuple(steps))


def _prepare(workflow: Workflow, step: Step, scale_learning_rate: bool) -> Step:
    plan = replace(step.training, scale_learning_rate=scale_learning_rate)  # type: ignore[type-var]
    where = f"cell {plan.cell}, line {plan.line}"
    if plan.kind == "keras_fit":
        what = (f"Keras fit in {plan.within}() (called there)" if plan.within
                else f"Keras fit of {', '.join(plan.models)}")
        reason = (f"{where}: {what} runs under a tf.distribute strategy chosen at run time; "
                  "the model is built or loaded in its scope")
        return replace(step, training=plan, reasons=(*step.reasons, reason))
    try:
        cells, prelude = _rewrite_custom_loop(workflow, step, plan)
    except _Unsafe as unsafe:
        reason = (f"{where}: custom training loop kept on one device: {unsafe}")
        return replace(step, training=replace(plan, distributed=False),
                       reasons=(*step.reasons, reason))
    reason = (f"{where}: custom training loop distributed: the dataset through "
              f"experimental_distribute_dataset, each {plan.step_function}(...) through "
              "strategy.run, its gradients divided by the replica count")
    return replace(step, cells=cells, training=replace(plan, prelude=prelude),
                   reasons=(*step.reasons, reason))


class _Unsafe(Exception):
    """The custom loop cannot be distributed safely (the message says why)."""


def _rewrite_custom_loop(workflow: Workflow, step: Step,
                         plan: TrainingPlan) -> tuple[tuple[CellCode, ...], str]:
    function = plan.step_function
    if function is None:
        raise _Unsafe("the GradientTape is in the loop body; put the per-batch work in a "
                      "function to distribute it")
    if not function.isidentifier():
        raise _Unsafe(f"the step function {function} is not a plain name")
    cells = list(step.cells)
    position = next(i for i, c in enumerate(cells) if c.index == plan.cell)
    defined_here = [i for i, c in enumerate(cells) if _defines_function(c.code, function)]
    prelude = ""
    if defined_here:
        at = defined_here[-1]
        cells[at] = replace(cells[at], code=_scale_gradients(cells[at].code, function),
                            rewritten=True)
    else:
        replays = [r for r in workflow.replays if function in r.names
                   and r.cell_index < plan.cell]
        if not replays:
            raise _Unsafe(f"{function} is not a function defined in the notebook")
        prelude = _scale_gradients(replays[-1].code, function)
    if plan.within is None:
        training_cell = cells[position]  # the function may be defined (and rewritten) there
        cells[position] = replace(training_cell, rewritten=True,
                                  code=_distribute_calls(training_cell.code, function))
        return tuple(cells), prelude
    # the loop is in a notebook function the cell calls: rewrite that function's definition
    looping = [i for i, c in enumerate(cells) if _defines_function(c.code, plan.within)]
    if looping:
        at = looping[-1]
        cells[at] = replace(cells[at], rewritten=True,
                            code=_distribute_calls(cells[at].code, function))
        return tuple(cells), prelude
    replays = [r for r in workflow.replays if plan.within in r.names
               and r.cell_index < plan.cell]
    if not replays:
        raise _Unsafe(f"the loop is in {plan.within}(), which is not a function defined at "
                      "the top level of a cell (a method is rewritten nowhere)")
    return tuple(cells), "\n\n".join(p for p in (
        prelude, _distribute_calls(replays[-1].code, function)) if p)


def _defines_function(code: str, name: str) -> bool:
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name
               for node in ast.parse(code).body)


def _scale_gradients(code: str, function: str) -> str:
    """`tape.gradient(loss, ...)` in `function` differentiates the replica's share of loss."""
    tree = ast.parse(code)
    definition = [n for n in tree.body
                  if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == function]
    if not definition:
        raise _Unsafe(f"{function} is not defined at the top level of its cell")
    tapes = {item.optional_vars.id for node in ast.walk(definition[-1])
             if isinstance(node, ast.With) for item in node.items
             if _is_tape(item.context_expr) and isinstance(item.optional_vars, ast.Name)}
    edits: list[tuple[int, int, str]] = []
    for node in ast.walk(definition[-1]):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "gradient" and isinstance(node.func.value, ast.Name)
                and node.func.value.id in tapes and node.args):
            edits += _wrap(code, node, f"{HELPER}.scale_gradients(")
    if not edits:
        raise _Unsafe(f"{function} does not call gradient() on a GradientTape it opens")
    return _apply(code, edits)


def _is_tape(expr: ast.expr) -> bool:
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    return (isinstance(func, ast.Attribute) and func.attr == "GradientTape") or (
        isinstance(func, ast.Name) and func.id == "GradientTape")


def _distribute_calls(code: str, function: str) -> str:
    """Route each `function(...)` call through strategy.run and its loop's dataset through
    experimental_distribute_dataset."""
    tree = ast.parse(code)
    edits: list[tuple[int, int, str]] = []
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id == function]
    if not calls:
        raise _Unsafe(f"the cell does not call {function} directly")
    for call in calls:
        if call.keywords and any(k.arg is None for k in call.keywords):
            raise _Unsafe(f"a call of {function} passes **keyword arguments")
        start, paren = _span(code, call.func)
        if code[paren:paren + 1] != "(":
            raise _Unsafe(f"a call of {function} is written in a form nb2cwl does not rewrite")
        after = ", " if call.args or call.keywords else ""
        edits.append((start, paren + 1, f"{HELPER}.run({function}{after}"))  # `f(` -> `run(f, `
    distributed = False
    for loop in ast.walk(tree):
        if not isinstance(loop, ast.For):
            continue
        feeds = [c for c in calls if any(c is n for n in ast.walk(loop))]
        if not feeds:
            continue
        targets = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
        used_by_call = {id(n) for c in feeds for a in [*c.args, *(k.value for k in c.keywords)]
                        for n in ast.walk(a)}
        uses = [n for stmt in loop.body for n in ast.walk(stmt)
                if isinstance(n, ast.Name) and n.id in targets]
        if not any(id(n) in used_by_call for n in uses):
            continue  # e.g. `for epoch in range(n)`: not the batches
        if any(id(n) not in used_by_call for n in uses):
            raise _Unsafe(f"the loop at line {loop.lineno} uses its batch outside "
                          f"{function}(...); each replica would see only part of it")
        edits += _wrap(code, loop.iter, f"{HELPER}.distribute(")
        distributed = True
    if not distributed:
        raise _Unsafe(f"no loop hands {function} the batches it iterates over (e.g. a "
                      "tf.data pipeline): there is nothing to split across replicas")
    return _apply(code, edits)


def _span(code: str, node: ast.AST) -> tuple[int, int]:
    """`node`'s start and end as character offsets into `code` (ast counts UTF-8 bytes)."""
    lines = code.splitlines(keepends=True)

    def offset(line: int, byte_column: int) -> int:
        column = len(lines[line - 1].encode("utf-8")[:byte_column].decode("utf-8"))
        return sum(len(x) for x in lines[:line - 1]) + column

    return (offset(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            offset(node.end_lineno, node.end_col_offset))  # type: ignore[attr-defined]


def _wrap(code: str, node: ast.AST, opening: str) -> list[tuple[int, int, str]]:
    """The edits that turn `node` into `opening` + node + `)`."""
    start, end = _span(code, node)
    return [(start, start, opening), (end, end, ")")]


def _apply(code: str, edits: list[tuple[int, int, str]]) -> str:
    """Replace each (start, end) range by its text, from the end of the code back."""
    for start, end, text in sorted(edits, reverse=True):
        code = code[:start] + text + code[end:]
    return code
