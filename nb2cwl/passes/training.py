"""Prepare training steps for a tf.distribute strategy (the step runtime picks the strategy).

Keras `fit` needs no change to the code: the runtime builds or loads the model inside
`strategy.scope()` and Keras splits each batch across the replicas. A custom GradientTape loop
is rewritten in the step's generated code (never in the notebook), keeping every line where it
was so tracebacks still point at the user's lines. The loop still iterates the notebook's own
batches; what runs per batch is run on the replicas, each on its share of the batch:

- a call of the per-batch step function `f(x, y)` becomes
  `__nb2cwl_training__.run(f, __nb2cwl_training__.split(x), __nb2cwl_training__.split(y))`:
  the batch is split along its first axis, the other arguments go to every replica;
- a batch loop whose body holds the tape and the optimizer update itself has the statements
  from the `with tf.GradientTape()` to the update lifted into a generated function (defined
  before the cell runs, its lines where they are in the cell), called the same way; the values
  the rest of the program reads come back from it;
- in the code the replicas run (`batch_kinds`), `tape.gradient(loss, ...)` is all-reduced by
  how the loss depends on the batch (a mean: weighted by the replicas' shares; a sum: added),
  so every replica holds the gradient of the notebook's loss over the global batch before
  anything else uses it; returned values are combined the same way, and calls with effects
  (print, a metric's update) run once, with the global batch's values.

When any of this cannot be proved to compute the notebook's algorithm the step keeps the code
as written and runs on the default (one-device) strategy, and the step's reasons say why.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import replace

from nb2cwl.ir.model import CellCode, Step, TrainingPlan, Workflow
from nb2cwl.passes.batch_kinds.kinds import COMBINE, HELPER, C, E, U, Unsafe
from nb2cwl.passes.batch_kinds.program import Program, names_read
from nb2cwl.passes.batch_kinds.replica_code import ReplicaCode
from nb2cwl.passes.batch_kinds.scope import Scope
from nb2cwl.passes.batch_kinds.unit import Unit
from nb2cwl.passes.training_syntax import (
    assigned_line,
    enclosing_loop,
    enclosing_loop_in,
    local_names,
    nodes_of,
    parent_map,
    reads_before_assignment,
)


def prepare_training(workflow: Workflow, scale_learning_rate: bool = False) -> Workflow:
    """Rewrite the custom loops of training steps; record why a step stays on one device."""
    steps = []
    for step in workflow.steps:
        if step.training is not None:
            step = _prepare(workflow, step, scale_learning_rate)
        steps.append(step)
    return replace(workflow, steps=tuple(steps))


#: The partition's reason for a training step's own boundaries (passes/partition.py).
_OWN_STEP = "a step of its own: a training step, run under its own strategy"


def _prepare(workflow: Workflow, step: Step, scale_learning_rate: bool) -> Step:
    plan = replace(step.training, scale_learning_rate=scale_learning_rate)  # type: ignore[type-var]
    where = workflow.where(plan.cell, plan.line)
    called = ""
    if plan.within and plan.origin:
        called = f" (in {plan.within}() at {workflow.where(*plan.origin)}, called here)"
    if plan.kind == "keras_fit":
        what = (f"Keras fit{called or f' in {plan.within}() (called here)'}" if plan.within
                else f"Keras fit of {', '.join(plan.models)}")
        reason = (f"{where}: {what} runs under a tf.distribute strategy chosen at run time; "
                  "the model is built or loaded in its scope")
        return replace(step, training=plan, reasons=(*step.reasons, reason))
    try:
        cells, preludes, what = _rewrite_custom_loop(workflow, step, plan)
    except Unsafe as unsafe:
        reason = f"{where}: custom training loop{called} kept on one device: {unsafe}"
        reasons = tuple(f"{_OWN_STEP[:-len('run under its own strategy')]}kept on one device "
                        "(below)" if r == _OWN_STEP else r for r in step.reasons)
        return replace(step, training=replace(plan, distributed=False, reason=str(unsafe)),
                       reasons=(*reasons, reason))
    reason = (f"{where}: custom training loop{called} distributed: {what} runs on the "
              "replicas, each on its share of the batch; its gradients are all-reduced by how "
              "the loss depends on the batch, so every update is the notebook's")
    return replace(step, cells=cells, training=replace(plan, preludes=preludes),
                   reasons=(*step.reasons, reason))


def _rewrite_custom_loop(workflow: Workflow, step: Step, plan: TrainingPlan
                         ) -> tuple[tuple[CellCode, ...], tuple[tuple[int, str], ...], str]:
    units = _units(workflow, step)
    program = Program(units)
    program.where = lambda unit, line: workflow.where(unit.cell, line)
    training_unit = next(u for u in units if u.key == f"cell:{plan.cell}")
    if plan.step_function is not None and not plan.step_function.isidentifier():
        raise Unsafe(f"the step function {plan.step_function} is not a plain name (a method "
                     "is rewritten nowhere)")
    if plan.within is None:
        unit, scope_body, enclosing = training_unit, training_unit.tree.body, None
    else:
        found = program.functions.get(plan.within)
        if found is None:
            raise Unsafe(f"the loop is in {plan.within}(), which is not a function defined at "
                         "the top level of a cell (a method is rewritten nowhere)")
        unit, enclosing = found
        scope_body = enclosing.body
    lifted: list[tuple[int, str]] = []
    if plan.step_function is not None:
        what = _distribute_step_calls(program, unit, scope_body, enclosing, plan.step_function)
    else:
        what = _lift_batch_body(program, unit, scope_body, enclosing, step, lifted)
    cells = tuple(
        replace(c, code=_unit(units, f"cell:{c.index}").rewritten(), rewritten=True)
        if _unit(units, f"cell:{c.index}").edits else c for c in step.cells)
    replays = [(u.cell, u.rewritten()) for u in units if u.key.startswith("replay:")
               and u.edits]
    return cells, tuple(replays + lifted), what


def _units(workflow: Workflow, step: Step) -> list[Unit]:
    """The step's cells and the definitions it replays, in notebook order; a replayed
    definition as its cell has it, at its lines there (tracebacks and explain show those)."""
    wanted = set(step.replay)
    cells = workflow.code_cells()
    units = [Unit(f"replay:{r.key}", r.cell_index,
                  _as_in_cell(cells[r.cell_index].code if r.cell_index in cells else None,
                              r.names) or r.code)
             for r in workflow.replays if r.key in wanted]
    units += [Unit(f"cell:{c.index}", c.index, c.code) for c in step.cells]
    return units


def _as_in_cell(code: str | None, names: tuple[str, ...]) -> str | None:
    """The statement of `code` defining `names`, at its own lines (earlier lines blank)."""
    if code is None:
        return None
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and (node.name,) == names:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            lines = code.splitlines(keepends=True)[first - 1:node.end_lineno]
            return "\n" * (first - 1) + "".join(lines)
    return None


def _unit(units: list[Unit], key: str) -> Unit:
    return next(u for u in units if u.key == key)


# --- a step function called per batch -------------------------------------------------------


def _distribute_step_calls(program: Program, unit: Unit, body: list[ast.stmt],
                           enclosing: ast.FunctionDef | None, name: str) -> str:
    if not name.isidentifier():
        raise Unsafe(f"the step function {name} is not a plain name (a method is rewritten "
                     "nowhere)")
    nested = {n.name: n for n in body if isinstance(n, ast.FunctionDef)}
    function = nested.get(name) or (program.functions[name][1] if name in program.functions
                                    else None)
    if function is None:
        raise Unsafe(f"{name} is not a function defined in the notebook")
    parents = parent_map(body)
    calls = [n for n in nodes_of(body) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id == name]
    if not calls:
        raise Unsafe(f"the cell does not call {name} directly")
    replicas = ReplicaCode(program, set(), where=program.where)
    for call in calls:
        loop = enclosing_loop(call, parents)
        if loop is None:
            raise Unsafe(f"{name} is called outside a loop at "
                         f"{program.where(unit, call.lineno)}: there are "
                         "no batches to split")
        batch = _batch_kinds(program, loop, call)
        if (call.keywords and any(k.arg is None for k in call.keywords)) or any(
                isinstance(a, ast.Starred) for a in call.args):
            raise Unsafe(f"a call of {name} passes * or ** arguments")
        arguments = [*call.args, *(k.value for k in call.keywords)]
        kinds = [_argument_kind(program, a, batch) for a in arguments]
        if E not in kinds:
            raise Unsafe(f"no loop hands {name} the batches it iterates over (its arguments "
                         f"at {program.where(unit, call.lineno)} do not come from the loop's "
                         "batch): there is "
                         "nothing to split across replicas")
        replicas.loop_batch = batch
        parameters = [a.arg for a in function.args.posonlyargs + function.args.args]
        bound = dict.fromkeys(parameters, C)
        layers = set()
        for index, (argument, kind) in enumerate(zip(call.args, kinds, strict=False)):
            if index < len(parameters):
                bound[parameters[index]] = kind
                if isinstance(argument, ast.Name) and argument.id in program.layers:
                    layers.add(parameters[index])
        for keyword in call.keywords:
            bound[keyword.arg] = _argument_kind(  # type: ignore[index]
                program, keyword.value, batch)
        outer = None
        if function.name in nested and enclosing is not None:
            outer = Scope({}, enclosing, unit, nested=nested)
        replicas.function(function, bound, outer, layers, entry=True)
        if not replicas.findings.gradients:
            raise Unsafe(f"{name} does not call gradient() on a GradientTape it opens")
        for argument, kind in zip(arguments, kinds, strict=True):
            if kind == E:
                unit.wrap(argument, f"{HELPER}.split(")
        start, func_end = unit.span(call.func)
        paren = unit.code.index("(", func_end)
        unit.edit(start, start, f"{HELPER}.run(")
        unit.edit(paren, paren + 1, ", " if arguments else "")
    return f"each {name}(...) of the loop at {program.where(unit, loop.lineno)}"


# --- a batch loop with the tape in its body ----------------------------------------------------


def _lift_batch_body(program: Program, unit: Unit, body: list[ast.stmt],
                     enclosing: ast.FunctionDef | None, step: Step,
                     lifted: list[tuple[int, str]]) -> str:
    loop, first, last = _inline_loop(body, lambda line: program.where(unit, line))
    segment = loop.body[first:last + 1]
    for node in nodes_of(segment):
        if isinstance(node, (ast.Return, ast.Break, ast.Continue, ast.Yield, ast.YieldFrom,
                             ast.Await)) and enclosing_loop_in(node, segment) is None:
            raise Unsafe(f"{program.where(unit, node.lineno)}: `{ast.unparse(node)}` between "
                         "the GradientTape and the optimizer update leaves the loop (or the "
                         "function); nb2cwl lifts that code into a function of its own")
    batch = _batch_kinds(program, loop, segment[0])
    replicas = ReplicaCode(program, set(batch), where=program.where)
    scope = Scope({n: E for n in batch}, None, unit)
    replicas.body(segment, scope)
    if not replicas.findings.gradients:
        raise Unsafe(f"the loop at {program.where(unit, loop.lineno)} does not call gradient() "
                     "on its tape")
    # what the lifted function reads that the enclosing function (or, at the top level, the
    # segment itself: an accumulator) binds goes in as an argument
    enclosing_locals = local_names(enclosing) if enclosing is not None else scope.local_names
    reads = reads_before_assignment(segment)
    parameters = [n for n in reads if n in batch or n in enclosing_locals]
    outside = _names_read_outside(unit, segment, enclosing, step, program)
    returned = [n for n in sorted(scope.local_names) if n in outside]
    wrapped = []
    for name in returned:
        kind = scope.kinds.get(name, U)
        if kind == U:
            set_at = program.where(unit, assigned_line(segment, name))
            raise Unsafe(f"`{name}`, set at {set_at} of the "
                         "per-batch code, is used afterwards, and nb2cwl cannot tell how it "
                         "depends on the batch")
        wrapped.append(f"{HELPER}.total({name}, {COMBINE[kind]!r})" if kind in COMBINE
                       else name)
    start_line, end_line = segment[0].lineno, segment[-1].end_lineno or segment[-1].lineno
    function = f"__nb2cwl_step_{unit.cell}_{start_line}"
    lines = unit.code.splitlines(keepends=True)
    seg_start = unit.offset(start_line, 0)
    seg_end = sum(len(x) for x in lines[:end_line])
    text = unit.rewritten(seg_start, seg_end)
    for key in [k for k in unit.edits if seg_start <= k[0] and k[1] <= seg_end]:
        del unit.edits[key]
    indent = lines[start_line - 1][:len(lines[start_line - 1])
                                    - len(lines[start_line - 1].lstrip())]
    if not text.endswith("\n"):
        text += "\n"
    results = ""
    if returned:
        results = f"{indent}return ({', '.join(wrapped)},)\n"
    definition = ("\n" * (start_line - 2) + f"def {function}({', '.join(parameters)}):\n"
                  + text + results)
    lifted.append((unit.cell, definition))
    arguments = ", ".join(f"{HELPER}.split({n})" if n in batch else n for n in parameters)
    call = f"{HELPER}.run({function}{', ' if arguments else ''}{arguments})"
    if returned:
        call = f"{', '.join(returned)}, = {call}"
    statement_start = unit.offset(start_line, segment[0].col_offset)
    statement_end = unit.offset(end_line, segment[-1].end_col_offset or 0)
    unit.edit(statement_start, statement_end, call + "\n" * (end_line - start_line))
    end = program.where(unit, end_line).rsplit(", ", 1)[-1]
    return (f"the per-batch code from {program.where(unit, start_line)} to {end} (the "
            "GradientTape to the optimizer update)")


def _inline_loop(body: list[ast.stmt], where: Callable[[int], str]
                 ) -> tuple[ast.For | ast.While, int, int]:
    """The loop whose body records the tape and applies the update; the indices of the first
    and last statements of that body the replicas run."""
    for loop in nodes_of(body):
        if not isinstance(loop, (ast.For, ast.While)):
            continue
        tapes = [i for i, s in enumerate(loop.body) if isinstance(s, ast.With) and any(
            _is_tape(item.context_expr) for item in s.items)]
        updates = [i for i, s in enumerate(loop.body) if any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr in ("apply_gradients", "apply") for n in ast.walk(s))]
        if tapes and updates and updates[-1] >= tapes[0]:
            return loop, tapes[0], updates[-1]
        if any(_is_tape(n) for n in nodes_of(loop.body) if isinstance(n, ast.Call)) and not any(
                isinstance(n, (ast.For, ast.While)) for n in nodes_of(loop.body)):
            raise Unsafe(f"the GradientTape of the loop at {where(loop.lineno)} is inside a "
                         "condition or another statement; nb2cwl lifts a tape written "
                         "directly in the batch loop's body")
    raise Unsafe("no batch loop records a GradientTape and applies its gradients in its body")


def _is_tape(expr: ast.expr) -> bool:
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    return (isinstance(func, ast.Attribute) and func.attr == "GradientTape") or (
        isinstance(func, ast.Name) and func.id == "GradientTape")


# --- the batch --------------------------------------------------------------------------------


def _batch_kinds(program: Program, loop: ast.For | ast.While, before: ast.AST) -> set[str]:
    """The names holding the batch (or values computed from it, example by example) where
    `before` runs in `loop`: the loop's variables (not enumerate's counter), what `next()`
    draws in the loop, and what the loop's body computes from them first."""
    names: set[str] = set()
    if isinstance(loop, ast.For):
        target = loop.target
        if isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Name) and \
                loop.iter.func.id == "enumerate" and isinstance(target, ast.Tuple) and \
                len(target.elts) == 2:
            target = target.elts[1]
        names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    kinds = ReplicaCode(program, set(), recording=False)
    scope = Scope(dict.fromkeys(names, E), None, Unit("loop", 0, "pass"))
    for statement in loop.body:
        if statement is before or any(n is before for n in ast.walk(statement)):
            break
        for node in ast.walk(statement):
            if not isinstance(node, ast.Assign):
                continue
            value = node.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and \
                    value.func.id == "next":
                kind = E
            else:
                try:
                    kind = kinds.expr(value, scope)
                except Unsafe:
                    kind = U
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        scope.kinds[name.id] = _split_kind(kind, value, scope)
    return {n for n, k in scope.kinds.items() if k == E}


def _split_kind(kind: str, value: ast.expr, scope: Scope) -> str:
    """E (split across the replicas) for a value of the loop that is the batch or computed
    from it example by example, or computed from it in a way the analysis cannot tell (split:
    a shape that does not split fails loudly); C (the same on every replica) for anything
    else, such as the batch's size or a mean over it: the loop computed it on the global
    batch, as the notebook does."""
    if kind == E:
        return E
    if kind == U and _reads(value, {n for n, k in scope.kinds.items() if k == E}):
        return E
    return C


def _argument_kind(program: Program, argument: ast.expr, batch: set[str]) -> str:
    """How the loop hands `argument` to the per-batch code (see `_split_kind`)."""
    scope = Scope(dict.fromkeys(batch, E), None, Unit("loop", 0, "pass"))
    try:
        kind = ReplicaCode(program, set(), recording=False).expr(argument, scope)
    except Unsafe:
        kind = U
    return _split_kind(kind, argument, scope)


def _reads(node: ast.AST, names: set[str]) -> bool:
    return any(n.id in names for n in names_read([node]))


# --- names ------------------------------------------------------------------------------------


def _names_read_outside(unit: Unit, segment: list[ast.stmt], enclosing: ast.FunctionDef | None,
                        step: Step, program: Program) -> set[str]:
    """The names read anywhere the lifted code's results may be seen: the rest of the
    enclosing function, or (at the top level) the step's code and what later steps load."""
    inside = {id(n) for statement in segment for n in ast.walk(statement)}
    if enclosing is not None:
        return {n.id for n in names_read(enclosing.body) if id(n) not in inside}
    found = set(step.outputs)
    for other in program.units:
        found |= {n.id for n in names_read([other.tree]) if id(n) not in inside}
    return found
