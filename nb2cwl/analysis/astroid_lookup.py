"""What names and calls refer to in the whole-notebook astroid module (definitions, imported
definitions, assigned values, the notebook functions and methods a call may run), and the
calls and loops of statements.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import astroid
from astroid import bases, nodes
from astroid.exceptions import AstroidError

MAX_DEPTH = 4  # how far calls and class bases are followed


def nodes_outside_loops(body: list[nodes.NodeNG]) -> Iterator[nodes.NodeNG]:
    """The nodes of `body`, not descending into loops, functions or classes inside it."""
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (nodes.For, nodes.While, nodes.FunctionDef, nodes.ClassDef,
                             nodes.Lambda)):
            continue
        stack.extend(reversed(list(node.get_children())))


def calls_in(body: list[nodes.NodeNG]) -> Iterator[nodes.Call]:
    for stmt in body:
        yield from stmt.nodes_of_class(nodes.Call)


def loops_in(body: list[nodes.NodeNG]) -> Iterator[nodes.For | nodes.While]:
    for stmt in body:
        yield from stmt.nodes_of_class((nodes.For, nodes.While))


def definitions(name: nodes.Name) -> list[nodes.NodeNG]:
    """The def/class statements `name` may refer to where it stands."""
    try:
        _, assigned = name.lookup(name.name)
    except (AstroidError, RecursionError):
        return []
    return [a for a in assigned if isinstance(a, (nodes.FunctionDef, nodes.ClassDef))]


def imported_definitions(name: nodes.Name) -> list[nodes.NodeNG]:
    """The def/class statements an imported `name` refers to (a module beside the
    notebook: `from netlib import build_model`)."""
    try:
        _, assigned = name.lookup(name.name)
    except (AstroidError, RecursionError):
        return []
    found: list[nodes.NodeNG] = []
    for statement in assigned:
        if not isinstance(statement, nodes.ImportFrom) or statement.level:
            continue
        original = next((n for n, alias in statement.names if (alias or n) == name.name), None)
        folder = os.path.dirname(statement.root().file or "")
        path = os.path.join(folder, *statement.modname.split(".")) + ".py"
        if original is None or not folder or not os.path.isfile(path):
            continue
        try:  # the kernel runs beside the notebook: its modules import from there
            module = astroid.MANAGER.ast_from_file(path, statement.modname)
        except (AstroidError, SyntaxError, RecursionError):
            continue
        found += [d for d in module.locals.get(original, [])
                  if isinstance(d, (nodes.FunctionDef, nodes.ClassDef))]
    return found


def assigned_values(name: nodes.Name) -> list[nodes.NodeNG]:
    """The expressions assigned to `name` where it stands (module scope: every cell)."""
    try:
        _, assigned = name.lookup(name.name)
    except (AstroidError, RecursionError):
        return []
    values: list[nodes.NodeNG] = []
    for target in assigned:
        parent = target.parent
        if isinstance(target, nodes.AssignName) and isinstance(parent, (nodes.Assign,
                                                                          nodes.AnnAssign)):
            if parent.value is not None:
                values.append(parent.value)
        elif isinstance(target, nodes.AssignName) and isinstance(parent, nodes.NamedExpr):
            values.append(parent.value)
    return values


def only_imported(expression: nodes.NodeNG, depth: int = 0) -> bool:
    """True when `expression` starts at a name that only imports bind: `Ridge`,
    `np.random.default_rng`, or a method of what a library returned (`np.linalg.eigh(a).max`,
    `pd.read_csv(p)["x"].mean`, `(np.einsum(...) <= 1).sum`), or of a variable every
    assignment of which is such a library call given only literals and library values
    (`rng = np.random.default_rng(0)`, then `rng.normal`). What it calls is then the
    library's, not the notebook's."""
    while isinstance(expression, (nodes.Attribute, nodes.Call, nodes.Subscript)):
        expression = (expression.expr if isinstance(expression, nodes.Attribute) else
                      expression.func if isinstance(expression, nodes.Call) else
                      expression.value)
    if isinstance(expression, (nodes.Compare, nodes.BinOp)) and depth < MAX_DEPTH:
        # `(np.einsum(...) <= 1).sum`: an operator on library values and literals
        operands = ([expression.left, *(c for _, c in expression.ops)]
                    if isinstance(expression, nodes.Compare)
                    else [expression.left, expression.right])
        return all(_plain_argument(o, depth + 1) for o in operands)
    if not isinstance(expression, nodes.Name):
        return False
    try:
        _, assigned = expression.lookup(expression.name)
    except (AstroidError, RecursionError):
        return False
    if not assigned:
        return False
    if all(isinstance(a, (nodes.Import, nodes.ImportFrom)) for a in assigned):
        return True
    if depth >= MAX_DEPTH:
        return False
    values = assigned_values(expression)
    return len(values) == len(assigned) and all(
        isinstance(v, nodes.Call) and only_imported(v.func, depth + 1)
        and all(_plain_argument(a, depth + 1) for a in [*v.args, *(k.value for k in
                                                                   v.keywords or ())])
        for v in values)


def _plain_argument(value: nodes.NodeNG, depth: int) -> bool:
    """A literal, or what a library gives (no notebook object can come back through it)."""
    if isinstance(value, nodes.Const):
        return True
    if isinstance(value, (nodes.Tuple, nodes.List)):
        return all(_plain_argument(e, depth) for e in value.elts)
    if isinstance(value, nodes.UnaryOp):
        return _plain_argument(value.operand, depth)
    return isinstance(value, (nodes.Name, nodes.Attribute, nodes.Call, nodes.Subscript,
                              nodes.Compare, nodes.BinOp)) and only_imported(value, depth)


def callees(call: nodes.Call, module: nodes.Module | None) -> list[nodes.FunctionDef]:
    """The notebook's own functions and methods `call` may run (a class: its __init__)."""
    if only_imported(call.func):  # no notebook function: spare inferring into the library
        return []
    try:
        inferred = list(call.func.infer())
    except (AstroidError, RecursionError):
        return []
    found: list[nodes.FunctionDef] = []
    for value in inferred:
        if isinstance(value, bases.BoundMethod):
            value = value._proxied
        if isinstance(value, nodes.ClassDef):
            init = value.locals.get("__init__")
            value = init[0] if init else None
        if isinstance(value, nodes.FunctionDef) and module is not None and \
                value.root() is module:
            found.append(value)
    if not found and isinstance(call.func, nodes.Attribute):  # a decorated method
        found = instance_methods(call.func, module)           # (@tf.function) infers as
    return found                                              # the decorator's result


def instance_methods(attribute: nodes.Attribute,
                     module: nodes.Module | None) -> list[nodes.FunctionDef]:
    """The notebook class methods `obj.name` names, where `obj` is one of its instances."""
    try:
        owners = list(attribute.expr.infer())
    except (AstroidError, RecursionError):
        return []
    found: list[nodes.FunctionDef] = []
    for owner in owners:
        cls = owner._proxied if isinstance(owner, bases.Instance) else owner
        if not isinstance(cls, nodes.ClassDef) or module is None or cls.root() is not module:
            continue
        found += [m for m in cls.locals.get(attribute.attrname, [])
                  if isinstance(m, nodes.FunctionDef)]
    return found

