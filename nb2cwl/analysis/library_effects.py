"""Calls into libraries: the process-wide state they change, the frameworks they seed, the
hidden random generators they draw from, and libraries nb2cwl has no table for."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from astroid import nodes

from nb2cwl.analysis import knowledge as kb
from nb2cwl.analysis.effects import Effects, Hold, StateChange
from nb2cwl.analysis.names import root_name

if TYPE_CHECKING:
    from nb2cwl.analysis.state import NamespaceState


class LibraryEffects:
    """Mixin for the effect walker: library calls and hidden state (see the module docstring)."""

    fx: Effects
    state: NamespaceState
    function_mode: bool
    locals: set[str]

    # provided by the effect walker
    qualify: Callable[[nodes.NodeNG], str | None]
    mutate_expr: Callable[[nodes.NodeNG, int, str], None]
    local_reach: Callable[..., set[str]]

    def _library_call(self, node: nodes.Call, qualified: str | None, line: int) -> None:
        """A call into a library: the state it changes, seeds, and libraries unknown."""
        if qualified is None or root_name(node.func) not in self.state.imports:
            return
        family = kb.family_of(qualified)
        if family:
            self.fx.families.add(family)
        kind = kb.state_set_by_call(qualified)
        if kind is not None:
            self.fx.state_changes.append(StateChange(line, kind, f"{qualified}()"))
            self.fx.module_state.add(qualified)
        seeded = kb.seed_of(qualified)
        if seeded is not None and family:
            self.fx.holds.append(Hold(family, line, f"{qualified}() sets {seeded}, which no "
                                                    "step can hand on to the next"))
            self.fx.module_state.add(qualified)
        if qualified in kb.LOOP_STATE_CALLS:
            self.fx.module_state.add(qualified)
        if kb.library_of(qualified) is None and family:
            self.fx.holds.append(Hold(family, line, f"{qualified}() calls into {family}, a "
                                                    "library nb2cwl has no knowledge of: it "
                                                    "may keep state that later cells see"))
            self.fx.module_state.add(qualified)

    def _hidden_rng(self, qualified: str | None, node: nodes.Call) -> None:
        if not qualified:
            return
        module, _, attr = qualified.rpartition(".")
        if module in kb.RNG_STATE and attr not in kb.RNG_SAFE[module]:
            self.draw({kb.RNG_STATE[module]})
        library = kb.library_of(qualified)
        setting = kb.state_set_by_call(qualified) is not None  # sklearn.set_config draws nothing
        if library is not None and library.draws and not setting and self.call_draws(
                qualified, node):
            self.draw(library.draws)

    def call_draws(self, qualified: str, node: nodes.Call) -> bool:
        """Whether a call into a library that draws takes numbers from a global generator.

        Not when it is given its own seed (`random_state=0`), nor when it never draws
        (`LinearRegression()`, `KFold(5)`), nor when it only draws through what it is given
        and all of that is seeded (`cross_val_score(seeded_model, X, y)`). A generator given
        as the seed (`random_state=rng`) is advanced by the call: a change of that object.
        """
        seed = self._seed_given(node)
        if seed is not None:
            return False
        if kb.never_draws(qualified):
            return _drawing_setting(node)
        if qualified in kb.DRAWS_THROUGH_ARGUMENTS:
            return self._arguments_draw(node, kb.DRAWS_THROUGH_ARGUMENTS[qualified])
        return True

    def _seed_given(self, node: nodes.Call) -> nodes.NodeNG | None:
        """The value of the call's seed keyword, if it has one that is not None; a generator
        object given there is marked as changed by the call."""
        for keyword in node.keywords or ():
            value = keyword.value
            if keyword.arg not in kb.SEED_KEYWORDS or (
                    isinstance(value, nodes.Const) and value.value is None):
                continue
            if not self._seed_value(value):  # in a function: a parameter is its argument
                self.mutate_expr(value, node.lineno or 0,
                                 f"{keyword.arg}={value.as_string()} draws from that generator")
            return value
        return None

    def _seed_value(self, value: nodes.NodeNG) -> bool:
        """A number (or a fresh generator) rather than a generator object that is shared."""
        if isinstance(value, (nodes.Const, nodes.Call, nodes.BinOp, nodes.UnaryOp)):
            return True  # 0, RandomState(i), rng.integers(1e9) (the draw is its own call), i + 1
        if isinstance(value, nodes.Name):
            return self.state.types.get(value.name) in kb.SCALAR_TYPES
        if isinstance(value, nodes.Subscript):  # seeds[i]
            root = root_name(value)
            return root is not None and (root in self.state.immutable_items
                                         or self.state.types.get(root) == "numpy.ndarray")
        return False

    def _arguments_draw(self, node: nodes.Call, which: str) -> bool:
        """Whether an estimator given to the call may draw: a name of a drawing library's
        object that is not seeded, or a call inside the arguments that draws. `which`: the
        arguments that are estimators, "first" or "all" (and the estimator keywords)."""
        positional = node.args[:1] if which == "first" else node.args
        given = [k.value for k in node.keywords or () if k.arg in kb.ESTIMATOR_KEYWORDS]
        for argument in [*positional, *given]:
            for part in [argument, *argument.nodes_of_class((nodes.Name, nodes.Call))]:
                if isinstance(part, nodes.Name) and part.name not in self.state.seeded and (
                        part.name not in self.state.imports) and (
                        _drawing_families(self.state.families.get(part.name, ()))):
                    return True
                if isinstance(part, nodes.Call):
                    qualified = self.qualify(part.func)
                    library = kb.library_of(qualified)
                    if (qualified and library is not None and library.draws
                            and self.call_draws(qualified, part)):
                        return True
        return False

    def library_callable_passed(self, node: nodes.NodeNG) -> None:
        """A name holding a library's callables used as a value, not called here (handed to
        a function, put in a partial): it may be called there with no seed of its own, so it
        draws as those callables do unseeded."""
        held = self.state.library_callables.get(node.name) if isinstance(
            node, nodes.Name) else None
        parent = node.parent
        handed = (isinstance(parent, nodes.Call) and parent.func is not node) or isinstance(
            parent, (nodes.Keyword, nodes.Starred))  # run(cls), partial(cls, n=3)
        if held is None or not handed:
            return
        for qualified in sorted(held):
            library = kb.library_of(qualified)
            if library is not None and library.draws and not kb.never_draws(qualified):
                self.draw(library.draws)

    def seeded_object(self, value: nodes.NodeNG) -> bool:
        """`model = RandomForestClassifier(random_state=0)`: an object of a library that draws,
        made so that none of its methods draws from a global generator."""
        if not isinstance(value, nodes.Call):
            return False
        func = value.func
        if isinstance(func, nodes.Attribute) and isinstance(func.expr, nodes.Call) and (
                func.attrname in _RETURNS_ITSELF):
            return self.seeded_object(func.expr)  # LogisticRegression().fit(X, y)
        held = self.state.library_callables.get(func.name) if isinstance(
            func, nodes.Name) else None
        if held is not None:  # cls(random_state=0), cls over {"lr": LogisticRegression, ...}
            return all(self._seeded_call(qualified, value) for qualified in held)
        return self._seeded_call(self.qualify(value.func), value)

    def _seeded_call(self, qualified: str | None, value: nodes.Call) -> bool:
        library = kb.library_of(qualified)
        if not qualified or library is None or not library.draws:
            return False
        if kb.state_set_by_call(qualified) is not None:
            return False
        root = root_name(value.func)
        if root is None or (root not in self.state.imports
                            and root not in self.state.library_callables):
            return False
        last = qualified.rsplit(".", 1)[-1]
        makes_object = last[:1].isupper() or qualified in kb.DRAWS_THROUGH_ARGUMENTS
        return makes_object and not self.call_draws(qualified, value)

    def _receiver_draws(self, root: str, method: str, node: nodes.Call,
                        receiver: nodes.NodeNG | None = None) -> None:
        """A method of a library's object that may draw from a hidden random generator
        (an estimator's fit, df.sample()); not one made with its own seed, named
        (`model.fit`) or not (`RandomForestClassifier(random_state=s).fit(X, y)`)."""
        if self._seed_given(node) is not None:
            return
        if method in kb.RANDOM_METHODS:
            self.draw({"rng:numpy"})
        if root in self.state.seeded or self.seeded_object(receiver):
            return
        globals_ = {root}
        if self.function_mode and root in self.locals:  # a parameter `model`: not the global
            globals_ = {t for t in self.local_reach(root) if t not in self.locals}  # of its name
        for family in sorted({f for name in globals_ for f in self.state.families.get(name, ())}):
            for library in kb.LIBRARIES:
                if library.family == family and (library.drawing_methods is None
                                                  or method in library.drawing_methods):
                    self.draw(library.draws)

    def _opaque_namespace(self, node: nodes.Call, qualified: str | None, line: int) -> None:
        if qualified in ("exec", "eval", "globals", "locals") or (
                qualified == "vars" and not node.args):
            self.fx.opaque_namespace.append((line, f"{qualified}() reads or writes variables "
                                                   "the analysis cannot see"))
        elif (qualified in ("setattr", "delattr") and node.args
              and root_name(node.args[0]) in self.state.imports):
            self.fx.holds.append(Hold(kb.family_of(self.qualify(node.args[0])) or "*", line,
                                      f"{qualified}() on a module changes it for every later "
                                      "cell that uses it"))
            self.fx.module_state.add(f"{qualified}()")


#: Methods of an estimator that return the estimator itself.
_RETURNS_ITSELF = frozenset({"fit", "partial_fit", "set_params"})


def _drawing_setting(node: nodes.Call) -> bool:
    """`KFold(5, shuffle=True)`, `LogisticRegression(solver="saga")`: a setting under which a
    call that otherwise never draws does."""
    for keyword in node.keywords or ():
        values = kb.DRAWING_SETTINGS.get(keyword.arg or "")
        if values is None:
            continue
        if not isinstance(keyword.value, nodes.Const) or keyword.value.value in values:
            return True
    return False


def _drawing_families(families) -> bool:
    return any(library.draws and library.family in families for library in kb.LIBRARIES)
