"""Which statements of a cell are definitions another step replays instead of loading a value:
imports, defs and classes whose definition-time names are themselves replayable, bindings of
process-wide objects, and the assignments that declare the notebook's parameters.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from astroid import nodes

from nb2cwl.analysis.state import Definition, NamespaceState
from nb2cwl.analysis.walker import BUILTIN_NAMES, EffectWalker

_DEF_STATEMENTS = (nodes.Import, nodes.ImportFrom, nodes.FunctionDef, nodes.AsyncFunctionDef,
                   nodes.ClassDef)


def parameter_definition(stmt: nodes.NodeNG, cell_index: int, number: int, offset: int,
                         parameters: dict[str, int] | None) -> Definition | None:
    """The assignment that declares a parameter: every step that reads it assigns the run's
    value instead (and so does the step running the parameters cell, right after it)."""
    if not parameters:
        return None
    if isinstance(stmt, nodes.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
    elif isinstance(stmt, nodes.AnnAssign) and stmt.value is not None:
        target = stmt.target
    else:
        return None
    if not isinstance(target, nodes.AssignName) or target.name not in parameters:
        return None
    if stmt.lineno - offset != parameters[target.name]:
        return None  # an earlier assignment of the same name: the last one is the parameter
    return Definition(f"{cell_index}:{number}", cell_index, (target.name,), stmt.as_string(),
                      parameter=target.name)


def replayable_definition(
    stmt: nodes.NodeNG, state: NamespaceState, cell_index: int, number: int,
    walker: EffectWalker,
) -> Definition | None:
    """A Definition when `stmt` can be replayed in another step instead of shipped as data."""
    key = f"{cell_index}:{number}"
    if _state_object_binding(stmt, walker):  # logger = logging.getLogger(__name__)
        requires = [state.definitions[n.name] for n in stmt.value.nodes_of_class(nodes.Name)
                    if n.name in state.definitions]
        names = {n.name for n in stmt.value.nodes_of_class(nodes.Name)}
        if all(n in state.definitions or n in BUILTIN_NAMES for n in names):
            return Definition(key, cell_index, (stmt.targets[0].name,), stmt.as_string(),
                              tuple(dict.fromkeys(requires)))
        return None
    if not isinstance(stmt, _DEF_STATEMENTS):
        return None
    code = stmt.as_string()  # a decorated def's string includes its decorators
    if isinstance(stmt, nodes.Import):
        names = tuple(alias or name.split(".")[0] for name, alias in stmt.names)
        return Definition(key, cell_index, names, code)
    if isinstance(stmt, nodes.ImportFrom):
        if any(name == "*" for name, _ in stmt.names):
            return Definition(key, cell_index, (), code, star=True)
        return Definition(key, cell_index, tuple(a or n for n, a in stmt.names), code)
    requires: list[Definition] = []
    for name in sorted(_definition_time_names(stmt)):
        if name in state.definitions:
            requires.append(state.definitions[name])
        elif name not in BUILTIN_NAMES or name in state.functions:
            return None  # needs a data value at definition time: ship the object instead
    return Definition(key, cell_index, (stmt.name,), code, tuple(dict.fromkeys(requires)))


def as_written(definition: Definition, stmt: nodes.NodeNG, code: str,
               offset: int) -> Definition:
    """`definition` with the statement's own text and first line in the cell (`code`; `offset`:
    the cell's first line in the parsed module, less one), so that a step replays it as the
    kernel ran it: the same lines, comments and source for tracebacks, warnings and inspect."""
    decorators = getattr(stmt, "decorators", None)
    first = min([stmt.lineno, *(d.lineno for d in (decorators.nodes if decorators else ()))]
                ) - offset
    last = (stmt.end_lineno or stmt.lineno) - offset
    # lines as Python counts them (str.splitlines also breaks at \x0c, \r, \u2028, ...)
    lines = [line + "\n" for line in code.split("\n")][first - 1:last]
    text = "".join(lines)
    try:  # the same statement as astroid's rendering, alone on its lines
        same = first >= 1 and not lines[0][:1].isspace() and (
            ast.dump(ast.parse(text)) == ast.dump(ast.parse(definition.code)))
    except (SyntaxError, ValueError, IndexError):
        same = False
    if not same:  # another statement shares its lines: keep astroid's text
        return definition
    return replace(definition, code=text, line=first)


def changes_values_when_defined(stmt: nodes.NodeNG, walker: EffectWalker) -> bool:
    """A def or class statement whose decorators (or a base's `__init_subclass__`) change a
    value when it runs (`@register("double")` putting the function into a registry): a later
    step must not run it again, so what it binds is handed on as a value, with the registry."""
    if not isinstance(stmt, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.ClassDef)):
        return False
    changed = walker.defining_changes - {stmt.name}
    if not changed:
        return False
    walker.share(stmt.name, changed)  # the registry may hold what the statement defines
    walker.fx.notes.append((stmt.lineno, f"defining {stmt.name} changes "
                                         f"{', '.join(sorted(changed))}, which may hold it: "
                                         "they are handed on together, as values"))
    return True


def _state_object_binding(stmt: nodes.NodeNG, walker: EffectWalker) -> bool:
    """`name = <process-wide object>`: binding it again gives the very same object."""
    return (isinstance(stmt, nodes.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], nodes.AssignName)
            and walker._state_of_value(stmt.value) is not None)


def _definition_time_names(stmt: nodes.NodeNG) -> set[str]:
    parts: list[nodes.NodeNG] = []
    if stmt.decorators is not None:
        parts.extend(stmt.decorators.nodes)
    if isinstance(stmt, nodes.ClassDef):
        parts.extend(stmt.bases)
        parts.extend(k.value for k in stmt.keywords or ())
        class_locals = set(stmt.locals)
        for inner in stmt.body:
            if isinstance(inner, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
                parts.extend(_function_header(inner))
            else:
                parts.extend(n for n in inner.nodes_of_class(nodes.Name)
                             if n.name not in class_locals)
    else:
        parts.extend(_function_header(stmt))
    names: set[str] = set()
    for part in parts:
        if isinstance(part, nodes.Name):
            names.add(part.name)
        else:
            names |= {n.name for n in part.nodes_of_class(nodes.Name)}
    return names


def _function_header(node: nodes.FunctionDef) -> list[nodes.NodeNG]:
    args = node.args
    header: list[nodes.NodeNG] = []
    if node.decorators is not None:
        header.extend(node.decorators.nodes)
    header.extend(args.defaults or [])
    header.extend(d for d in args.kw_defaults or [] if d is not None)
    header.extend(a for a in [*(args.annotations or []), *(args.kwonlyargs_annotations or []),
                              *(args.posonlyargs_annotations or []), args.varargannotation,
                              args.kwargannotation, node.returns] if a is not None)
    return header


def is_docstring_or_pass(stmt: nodes.NodeNG) -> bool:
    if isinstance(stmt, nodes.Pass):
        return True
    return isinstance(stmt, nodes.Expr) and isinstance(stmt.value, nodes.Const) and isinstance(
        stmt.value.value, str)

