"""Callables handed to a call: the callee may call them, with what the call also hands it.

`apply(push, acc)`, `list(map(shuffle_in_place, rows))`, `pool.map(results.append, xs)`,
`run(random.shuffle, deck)`: the handed callable may change the call's other arguments, what
it holds (`results.append`: results) and draw from a global generator, unless the function it
is handed to seeds every call of it. What calling a value changes is `callable_changes`'
question. A notebook function's summary (`called_parameters`) says which of its parameters
it calls or hands on, what it hands them at which position (its parameters' and globals'
objects), and which it always calls with a seed: a function that never calls what it is
given (`fit(model, X)`) changes nothing through it, and one handed `train` that changes only
its first argument changes only what the function hands it first (`train(clone(m), X)`
changes no X). Where the callee is not the notebook's (`map`, `pool.map`, `df.apply`), every
other argument may be handed, and the receiver's items, but for pandas' `apply`,
`transform`, `agg`, ..., which hand pieces of the frame that copy-on-write keeps apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from astroid import nodes

from nb2cwl.analysis import knowledge as kb
from nb2cwl.analysis.callable_changes import (
    CONTAINERS,
    METHODS,
    PARTIAL,
    WRAPPERS,
    CallableChanges,
    parts,
)
from nb2cwl.analysis.called_parameters import CalledParameters, call_values, given_arguments
from nb2cwl.analysis.effects import Effects, FunctionSummary
from nb2cwl.analysis.names import root_name
from nb2cwl.analysis.shared_objects import PANDAS_COPIES_ON_WRITE
from nb2cwl.analysis.state import NamespaceState


class HandedCallables(CalledParameters, CallableChanges):
    """Mixin for the effect walker: the effects of callables handed to calls."""

    fx: Effects
    state: NamespaceState
    function_mode: bool
    locals: set[str]
    params: tuple[str, ...]

    # provided by the effect walker
    mutate: Callable[..., None]
    roots_of: Callable[[nodes.NodeNG], set[str]]
    qualify: Callable[[nodes.NodeNG], str | None]
    draw: Callable[..., None]
    _method_call: Callable[[nodes.Call, nodes.Attribute, int], None]
    _notebook_method: Callable[[str], bool]
    _seed_given: Callable[[nodes.Call], nodes.NodeNG | None]

    def handed_callables(self, node: nodes.Call, line: int) -> None:
        """What the callables among the call's arguments may change when the callee calls
        them (see the module docstring)."""
        if self.function_mode:
            self._record_called_params(node)
        summary = self._callee_summary(node)
        values = call_values(node)
        maker = node.func
        if isinstance(maker, nodes.Call) and maker.args and (
                self.qualify(maker.func) in WRAPPERS) and self._changes_arguments(maker):
            for value in [*values, *call_values(maker)[1:]]:  # delayed(push)(acc, x)
                for root in sorted(self._changeable(value)):
                    self.mutate(root, line, f"{maker.args[0].as_string()}() changes its "
                                            "argument")
        receiver = node.func.expr if isinstance(node.func, nodes.Attribute) else None
        if isinstance(receiver, nodes.Call) and any(
                self._changes_arguments(a) for a in call_values(receiver)):
            for value in values:  # Runner(push).run(acc): run may call push with acc
                for root in sorted(self._changeable(value)):
                    self.mutate(root, line, f"{node.func.as_string()}() may call what "
                                            f"{receiver.func.as_string()}() was given")
        if receiver is not None and (root_name(receiver) in (None, *self.state.imports)
                                     or self._hands_pieces(node.func)):
            receiver = None
        for argument, parameter in _arguments(node, summary):
            known = summary is not None and parameter is not None
            if known and parameter not in summary.called_params:
                continue  # the notebook's function never calls what it is given there
            others = [] if known else [a for a in values if a is not argument]
            if receiver is not None:
                others.append(receiver)  # rows.sort(key=f), obj.run(f): its items
            why = f"{node.func.as_string()}() may call {argument.as_string()}, which changes"
            seeded = known and parameter in summary.seeded_params
            self._handed(argument, others, line, why, seeded)
            if known and self._changes_arguments(argument):
                self._handed_through(node, summary, parameter, argument, line, why)

    def _handed_through(self, node: nodes.Call, summary: FunctionSummary, parameter: str,
                        argument: nodes.NodeNG, line: int, why: str) -> None:
        """What the notebook's function hands the callable it gets as `parameter`, at the
        positions the callable changes: its other arguments, globals."""
        positions = self._changed_positions(argument)
        for called, position, root in sorted(summary.called_with):
            if called != parameter or not (positions is None or position < 0
                                           or position in positions):
                continue
            if root not in summary.param_names:
                if root not in self.state.functions:
                    self.mutate(root, line, f"{why} {root}")
                continue
            for given in given_arguments(node, summary, root):
                for target in sorted(self._changeable(given)):
                    self.mutate(target, line, f"{why} its argument")

    def _changed_positions(self, argument: nodes.NodeNG) -> set[int] | None:
        """The positions of the arguments a call of the handed value changes (None: any)."""
        summary = None
        if isinstance(argument, nodes.Lambda):
            from nb2cwl.analysis.summaries import summarize_function

            summary = summarize_function(argument, self.state, -1, set())
        elif isinstance(argument, nodes.Name) and (
                argument.name not in self.state.changing_callables):
            summary = self.state.functions.get(argument.name)
        if summary is not None:
            if summary.param_mutations - set(summary.positional):
                return None  # *args, keyword-only
            return {i for i, p in enumerate(summary.positional) if p in summary.param_mutations}
        qualified = self._library_function(argument)
        if qualified is not None:
            return {0} if qualified == "next" else set(kb.MUTATING_FUNCTIONS.get(qualified, ()))
        if isinstance(argument, nodes.Attribute) and isinstance(argument.expr, nodes.Name) and (
                self._builtin_type(argument.expr.name)):
            return {0}  # list.append(acc, x)
        return None

    def _handed(self, argument: nodes.NodeNG, others: list[nodes.NodeNG], line: int,
                why: str, seeded: bool = False) -> None:
        if isinstance(argument, nodes.Call) and self.qualify(argument.func) in PARTIAL and (
                argument.args):  # partial(push, acc): acc is handed to push too
            inner = argument.args[0]
            self._handed(inner, [*others, *(a for a in call_values(argument) if a is not inner)],
                         line, why, seeded or self._seed_given(argument) is not None)
            return
        if isinstance(argument, (*CONTAINERS, nodes.Dict, nodes.IfExp, nodes.BoolOp)):
            for part in parts(argument):  # run_all([push, log], acc), push if c else log
                self._handed(part, others, line, why, seeded)
            return
        if isinstance(argument, nodes.Attribute) and self._bound_method(argument) and (
                argument.attrname in METHODS or self._notebook_method(argument.attrname)):
            call = nodes.Call(lineno=line, col_offset=argument.col_offset,
                              parent=argument.parent, end_lineno=None, end_col_offset=None)
            call.postinit(func=argument, args=others, keywords=[])
            self._method_call(call, argument, line)  # as calling it there would
        if isinstance(argument, nodes.Name) and self.function_mode and (
                argument.name in self.locals):
            return  # handed on: the caller's call of this function decides (called_params)
        qualified = self._library_function(argument)
        if qualified is not None and not seeded:  # partial(RandomForestClassifier, random_state=0)
            library = kb.library_of(qualified)
            module, _, attr = qualified.rpartition(".")
            if module in kb.RNG_STATE and attr not in kb.RNG_SAFE[module]:
                self.draw({kb.RNG_STATE[module]})  # called with no seed of its own
            elif library is not None and library.draws and not kb.never_draws(qualified):
                self.draw(library.draws)
        if isinstance(argument, nodes.Lambda):  # lambda z, t=acc: t.append(z)
            from nb2cwl.analysis.summaries import default_values, summarize_function

            changed = summarize_function(argument, self.state, -1, set()).param_mutations
            for param, default in default_values(argument.args).items():
                if param in changed:
                    for root in sorted(self._changeable(default)):
                        self.mutate(root, line, f"{why} {root}")
        for held in sorted(self._held_changed(argument)):
            self.mutate(held, line, f"{why} {held}")  # add = results.append: results
        if self._changes_arguments(argument):
            for other in others:
                for root in sorted(self._changeable(other)):
                    self.mutate(root, line, f"{why} its argument")

    def _changeable(self, value: nodes.NodeNG) -> set[str]:
        """The names whose objects a value holds, but the notebook's functions and modules
        (`apply(fn, x)` hands x to fn, not fn)."""
        return {r for r in self.roots_of(value)
                if r not in self.state.functions and r not in self.state.imports}

    def _hands_pieces(self, func: nodes.Attribute) -> bool:
        """`df.apply(f)`, `df.groupby(k).transform(f)`: f gets pieces of the frame, which
        pandas' copy-on-write keeps apart from it (see shared_objects)."""
        root = root_name(func.expr)
        return PANDAS_COPIES_ON_WRITE and func.attrname in kb.PIECE_METHODS and (
            "pandas" in self.state.families.get(root or "", ()))


def _arguments(node: nodes.Call, summary: FunctionSummary | None,
               ) -> Iterator[tuple[nodes.NodeNG, str | None]]:
    """Each argument and the notebook function's parameter it fills (None: not known, as
    for what `*args` and `**kwargs` unpack)."""
    starred = any(isinstance(a, nodes.Starred) for a in node.args) or any(
        k.arg is None for k in node.keywords or ())
    for position, argument in enumerate(node.args):
        if isinstance(argument, nodes.Starred):
            yield argument.value, None  # apply(*args): what it unpacks
            continue
        parameter = None
        if summary is not None and not starred and position < len(summary.positional):
            parameter = summary.positional[position]
        yield argument, parameter
    for keyword in node.keywords or ():
        if keyword.arg is None:
            yield keyword.value, None  # apply(**kw)
            continue
        named = summary is not None and not starred and keyword.arg in summary.param_names
        yield keyword.value, keyword.arg if named else None
