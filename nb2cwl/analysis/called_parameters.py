"""What a function body does with the parameters it calls: which it calls or hands on to a
call (`called_params`), what it hands them at which position (`called_with`: its parameters'
and globals' objects, through its local names and comprehension variables), which it always
calls with a seed, and the changes a parameter's default callable makes (`def apply(x,
fn=push)`). The summary keeps these; `handed_callables` reads them where the function is
called with a callable, with `given_arguments`: what a call gives each of its parameters.
"""

from __future__ import annotations

from collections.abc import Callable

from astroid import nodes

from nb2cwl.analysis.effects import FunctionSummary
from nb2cwl.analysis.names import root_name


class CalledParameters:
    """Mixin for the effect walker, in a function body: the parameters it calls."""

    locals: set[str]
    params: tuple[str, ...]
    param_mutations: set[str]
    called_params: set[str]
    called_with: set[tuple[str, int, str]]
    unseeded_params: set[str]
    changing_defaults: set[str]
    item_roots: dict[str, set[str]]
    local_functions: dict[str, FunctionSummary]

    # provided by the effect walker
    mutate_expr: Callable[..., None]
    roots_of: Callable[[nodes.NodeNG], set[str]]
    local_reach: Callable[..., set[str]]
    _seed_given: Callable[[nodes.Call], nodes.NodeNG | None]
    name_changes_arguments: Callable[[str], bool]

    def merge_parameter_use(self, summary: FunctionSummary) -> None:
        """A nested function's or lambda's changes to this function's parameters, and the
        parameters it calls, are this function's."""
        self.param_mutations |= summary.param_mutations & set(self.params)
        self.called_params |= summary.called_params & set(self.params)
        self.unseeded_params |= (summary.called_params - summary.seeded_params) & set(
            self.params)
        self.called_with |= {(called, position, root)
                             for called, position, root in summary.called_with
                             if called in self.params and (root in self.params or (
                                 root not in self.locals and root not in summary.param_names))}

    def _record_called_params(self, node: nodes.Call) -> None:
        """In a function body: a parameter called (`fn(x)`, `fns[0](x)`) or handed to a
        call, whether that call seeds it, and what it is given, by position: parameters and
        globals, through local names too (`for row in ROWS: fn(row)`)."""
        called = root_name(node.func) if isinstance(
            node.func, (nodes.Name, nodes.Subscript)) else None
        params = set(self.params)
        if called is not None and called in self.locals | set(self.item_roots) and any(
                self.name_changes_arguments(t) for t in self._reached(called)
                if t not in self.locals):  # for h in HOOKS: h(row)
            for arg in call_values(node):
                self.mutate_expr(arg, node.lineno or 0, f"{called}() changes its argument")
        self._through_local_functions(node)
        calls = self._reached(called) & params if called is not None else set()
        handed = {target for a in call_values(node) if isinstance(a, nodes.Name)
                  for target in self._reached(a.name)} & params
        if not calls and not handed:
            return
        self.called_params |= calls | handed
        if not (calls and self._seed_given(node) is not None):
            self.unseeded_params |= calls | handed  # Model(random_state=0) draws nothing
        if called is not None and self._reached(called) & self.changing_defaults:
            for arg in call_values(node):  # def apply(x, fn=push): fn(x) changes x
                self.mutate_expr(arg, node.lineno or 0, f"{called}() changes its argument")
        for position, argument in enumerate([*node.args, *(k.value for k in node.keywords
                                                           or ())]):
            unpacked = isinstance(argument, nodes.Starred) or position >= len(node.args)
            if isinstance(argument, nodes.Starred):
                argument = argument.value
            for root in self.roots_of(argument):
                for target in self._reached(root):
                    if target in params or target not in self.locals:
                        self.called_with |= {(p, -1 if unpacked else position, target)
                                             for p in calls if p != target}
                        self.called_with |= {(p, -1, target) for p in handed if p != target}

    def _through_local_functions(self, node: nodes.Call) -> None:
        """`def inner(z): fn(z)` in the body, then `inner(a)` or `map(inner, rows)`: fn gets
        a, or the items of rows."""
        values = call_values(node)
        for part in [node.func, *values]:
            inner = self.local_functions.get(part.name) if isinstance(part, nodes.Name) else None
            if inner is None:
                continue
            for called, position, root in sorted(inner.called_with):
                if called not in self.params or root not in inner.param_names:
                    continue
                given = given_arguments(node, inner, root) if part is node.func else [
                    v for v in values if v is not part]
                for value in given:
                    for target in {t for r in self.roots_of(value) for t in self._reached(r)}:
                        if target != called and (target in self.params
                                                 or target not in self.locals):
                            self.called_with.add((called, position if part is node.func
                                                  else -1, target))
                self.called_params.add(called)

    def _reached(self, root: str) -> set[str]:
        """In a function body: the names whose objects a local name may hold (a
        comprehension's variable: an item of its collection)."""
        if root in self.item_roots:
            return {t for r in self.item_roots[root] for t in self._reached(r)}
        return self.local_reach(root) if root in self.locals else {root}


def call_values(node: nodes.Call) -> list[nodes.NodeNG]:
    """The call's arguments, starred ones as what they unpack."""
    found = []
    for argument in [*node.args, *(k.value for k in node.keywords or ())]:
        found.append(argument.value if isinstance(argument, nodes.Starred) else argument)
    return found


def bound_argument(call: nodes.Call, summary: FunctionSummary, param: str,
                   ) -> nodes.NodeNG | None:
    """The argument the call gives the notebook function's parameter `param` (None: its
    default; the call has no starred arguments)."""
    for keyword in call.keywords or ():
        if keyword.arg == param:
            return keyword.value
    if param in summary.positional:
        position = summary.positional.index(param)
        if position < len(call.args):
            return call.args[position]
    return None


def given_arguments(call: nodes.Call, summary: FunctionSummary, param: str,
                    ) -> list[nodes.NodeNG]:
    """What the call gives the notebook function's parameter `param`: its argument, or for
    `*args` and `**kwargs` (a parameter neither positional nor named here) the arguments no
    other parameter takes; none when it keeps its default."""
    bound = bound_argument(call, summary, param)
    if bound is not None:
        return [bound]
    if param in summary.positional:
        return []
    named = set(summary.param_names)
    return [*(a.value if isinstance(a, nodes.Starred) else a
              for a in call.args[len(summary.positional):]),
            *(k.value for k in call.keywords or () if k.arg not in named)]
