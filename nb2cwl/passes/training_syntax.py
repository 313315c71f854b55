"""The syntax-tree questions the training rewrite (passes/training.py) asks of a cell's code:
walking it in order, each node's parent and enclosing loop, a function's local names, the names
a segment reads before assigning them, and the line that assigns a name."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from nb2cwl.passes.batch_kinds.program import names_read


def nodes_of(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of `body`, not descending into function or class definitions."""
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def parent_map(body: list[ast.stmt]) -> dict[int, ast.AST]:
    """Each node's parent in `body` (by the node's id), not inside definitions."""
    parents: dict[int, ast.AST] = {}
    for node in nodes_of(body):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    return parents


def enclosing_loop_in(node: ast.AST, statements: list[ast.stmt]) -> ast.For | ast.While | None:
    """The loop inside `statements` that holds `node`, if any (a break there stays in it)."""
    return enclosing_loop(node, parent_map(statements))


def enclosing_loop(node: ast.AST, parents: dict[int, ast.AST]) -> ast.For | ast.While | None:
    """The innermost loop holding `node` (`parents`: from `parent_map`)."""
    current = parents.get(id(node))
    while current is not None:
        if isinstance(current, (ast.For, ast.While)):
            return current
        current = parents.get(id(current))
    return None


def local_names(function: ast.FunctionDef) -> set[str]:
    """The names local to `function`: its parameters and the names it assigns."""
    names = {a.arg for a in function.args.posonlyargs + function.args.args
             + function.args.kwonlyargs}
    names |= {a.arg for a in (function.args.vararg, function.args.kwarg) if a is not None}
    in_comprehensions = {id(n) for c in nodes_of(function.body) if isinstance(c, ast.comprehension)
                         for n in ast.walk(c.target)}
    for node in nodes_of(function.body):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)) and \
                id(node) not in in_comprehensions:
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
    declared = {n for node in nodes_of(function.body) if isinstance(node, ast.Global)
                for n in node.names}
    return names - declared


def reads_before_assignment(statements: list[ast.stmt]) -> list[str]:
    """The names `statements` may read before they assign them, in the order first read."""
    assigned: set[str] = set()
    reads: list[str] = []

    def read(node: ast.AST) -> None:
        bound_inside = comprehension_targets(node)
        for name in sorted(names_read([node]), key=lambda n: (n.lineno, n.col_offset)):
            if name.id not in assigned and name.id not in reads and name.id not in bound_inside:
                reads.append(name.id)

    def bind(target: ast.AST) -> None:
        assigned.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))

    def visit(body: list[ast.stmt], definite: bool) -> None:
        for statement in body:
            if isinstance(statement, ast.Assign):
                read(statement.value)
                for target in statement.targets:
                    if not isinstance(target, ast.Name):
                        read(target)
                    if definite:
                        bind(target)
            elif isinstance(statement, ast.AugAssign):
                read(statement.target if isinstance(statement.target, ast.Name) else statement)
                read(statement.value)
            elif isinstance(statement, ast.With):
                for item in statement.items:
                    read(item.context_expr)
                    if item.optional_vars is not None and definite:
                        bind(item.optional_vars)
                visit(statement.body, definite)
            elif isinstance(statement, (ast.If, ast.While)):
                read(statement.test)
                visit(statement.body, False)
                visit(statement.orelse, False)
            elif isinstance(statement, ast.For):
                read(statement.iter)
                bind(statement.target)  # what the body reads of it, it bound first
                visit(statement.body, False)
                visit(statement.orelse, False)
            else:
                read(statement)

    visit(statements, True)
    return reads


def comprehension_targets(node: ast.AST) -> set[str]:
    """The names comprehensions inside `node` bind (their own scope's)."""
    return {n.id for c in ast.walk(node) if isinstance(c, ast.comprehension)
            for n in ast.walk(c.target) if isinstance(n, ast.Name)}


def assigned_line(segment: list[ast.stmt], name: str) -> int:
    """The line of `segment` that assigns `name` (for messages)."""
    for statement in segment:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx,
                                                                             ast.Store):
                return node.lineno
    return segment[0].lineno
