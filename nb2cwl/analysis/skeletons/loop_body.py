"""A scattered loop's per-item code: the body with each accumulation turned into a call of
the recorder, run once per item in the map steps (and `continue` ending the item's work)."""

from __future__ import annotations

import ast

from astroid import nodes

from nb2cwl.analysis.skeletons.model import ACCUMULATING_METHODS, READ_BACK, RECORD, Piece

ONCE = "for __nb2cwl_once__ in (0,):"


def recording_body(body: list[nodes.NodeNG], accumulators: set[str],
                   read_backs: set[str] | frozenset[str] = frozenset()) -> str:
    """The loop body as code, each accumulation turned into a call of the recorder, and each
    read of what the iteration just added (`xs[-1]`, see `loops.read_backs`) into a call
    that returns the value recorded."""
    source = "\n".join(stmt.as_string() for stmt in body)
    tree = ast.parse(source)
    tree = RecordAccumulations(accumulators, read_backs).visit(tree)
    # `continue` ends the item's work: run the body inside a loop of one pass
    once = ast.For(target=ast.Name("__nb2cwl_once__", ast.Store()),
                   iter=ast.Tuple([ast.Constant(0)], ast.Load()), body=tree.body, orelse=[])
    module = ast.Module(body=[once], type_ignores=[])
    ast.fix_missing_locations(module)
    return ast.unparse(module)


class RecordAccumulations(ast.NodeTransformer):
    def __init__(self, accumulators: set[str],
                 read_backs: set[str] | frozenset[str] = frozenset()) -> None:
        self.accumulators = accumulators
        self.read_backs = read_backs

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        self.generic_visit(node)
        if (isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name)
                and node.value.id in self.read_backs):
            call = ast.Call(func=ast.Name(READ_BACK, ast.Load()),
                            args=[ast.Constant(node.value.id), _key(node.slice)], keywords=[])
            return ast.copy_location(call, node)
        return node

    def _record(self, node: ast.stmt, *args: ast.expr) -> ast.stmt:
        call = ast.Call(func=ast.Name(RECORD, ast.Load()), args=list(args), keywords=[])
        return ast.copy_location(ast.Expr(call), node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        return node  # other scopes are left alone

    def visit_Expr(self, node: ast.Expr) -> ast.stmt:
        value = node.value
        if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                and isinstance(value.func.value, ast.Name)
                and value.func.value.id in self.accumulators
                and value.func.attr in ACCUMULATING_METHODS and not value.keywords):
            args = ast.Tuple(value.args, ast.Load())
            return self._record(node, ast.Constant(value.func.value.id),
                                ast.Constant("call:" + value.func.attr), args)
        return self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> ast.stmt:
        target = node.targets[0] if len(node.targets) == 1 else None
        if (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                and target.value.id in self.accumulators):
            return self._record(node, ast.Constant(target.value.id), ast.Constant("setitem"),
                                ast.Tuple([_key(target.slice), node.value], ast.Load()))
        return self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.stmt:
        op = type(node.op).__name__
        target = node.target
        if isinstance(target, ast.Name) and target.id in self.accumulators:
            return self._record(node, ast.Constant(target.id), ast.Constant("iop:" + op),
                                ast.Tuple([node.value], ast.Load()))
        if (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                and target.value.id in self.accumulators):
            return self._record(node, ast.Constant(target.value.id),
                                ast.Constant("isetitem:" + op),
                                ast.Tuple([_key(target.slice), node.value], ast.Load()))
        return self.generic_visit(node)


def _key(index: ast.expr) -> ast.expr:
    """A subscript's index as a value: `a:b` is only syntax there, `slice(a, b)` is a value."""
    if isinstance(index, ast.Slice):
        parts = [index.lower, index.upper, index.step]
        return ast.Call(ast.Name("slice", ast.Load()),
                        [p if p is not None else ast.Constant(None) for p in parts], [])
    if isinstance(index, ast.Tuple):
        return ast.Tuple([_key(e) for e in index.elts], ast.Load())
    return index


def recording_body_at_lines(body: list[nodes.NodeNG], header: int, accumulators: set[str],
                            piece: Piece,
                            read_backs: set[str] | frozenset[str] = frozenset()) -> str | None:
    """The per-item code as `recording_body` makes it, but as written and at the lines the
    body (of the loop on line `header`) has in its cell: a warning or traceback from it names
    the cell's line, as in the kernel. None where that cannot be done exactly (a body on the
    loop's own line, a recorded statement sharing its lines with another); the code then is
    `recording_body`'s."""
    first, last = piece.rel(body[0].fromlineno), piece.rel(body[-1].tolineno)
    if first <= piece.rel(header) or first < 2:
        return None
    lines = piece.lines[first - 1:last]
    try:
        tree = ast.parse("if True:\n" + "\n".join(lines))  # the body keeps its indentation
    except SyntaxError:
        return None
    if read_backs:
        return None  # the reads are rewritten inside statements: recording_body's code
    located = _LocatedRecords(accumulators)
    located.visit(tree)
    for old, new in located.replaced:
        start, end = old.lineno - 2, (old.end_lineno or old.lineno) - 2  # index in `lines`
        before = lines[start][:old.col_offset]
        after = lines[end][old.end_col_offset:] if old.end_col_offset is not None else "x"
        if before.strip() or (after.strip() and not after.strip().startswith("#")):
            return None  # another statement on the same lines
        lines[start] = before + ast.unparse(new)
        for index in range(start + 1, end + 1):
            lines[index] = ""
    code = "\n" * (first - 2) + ONCE + "\n" + "\n".join(lines) + "\n"
    try:  # exactly the code recording_body makes, only placed otherwise
        same = ast.dump(ast.parse(code)) == ast.dump(ast.parse(
            recording_body(body, accumulators)))
    except SyntaxError:
        same = False
    return code if same else None


class _LocatedRecords(RecordAccumulations):
    """The recorder's rewriting, remembering which statement became which call."""

    def __init__(self, accumulators: set[str]) -> None:
        super().__init__(accumulators)
        self.replaced: list[tuple[ast.stmt, ast.stmt]] = []

    def _record(self, node: ast.stmt, *args: ast.expr) -> ast.stmt:
        new = super()._record(node, *args)
        self.replaced.append((node, new))
        return new
