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

_SEED_KEYWORDS = ("random_state", "seed", "rng", "random_seed")


class LibraryEffects:
    """Mixin for the effect walker: library calls and hidden state (see the module docstring)."""

    fx: Effects
    state: NamespaceState

    qualify: Callable[[nodes.NodeNG], str | None]  # provided by the effect walker

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
            self.fx.rng.add(kb.RNG_STATE[module])
        library = kb.library_of(qualified)
        setting = kb.state_set_by_call(qualified) is not None  # sklearn.set_config draws nothing
        if library is not None and library.draws and not setting and not _seeded(node):
            self.fx.rng |= library.draws

    def _receiver_draws(self, root: str, method: str, node: nodes.Call) -> None:
        """A method of a library's object that may draw from a hidden random generator
        (an estimator's fit, df.sample())."""
        if _seeded(node):
            return
        if method in kb.RANDOM_METHODS:
            self.fx.rng.add("rng:numpy")
        for family in self.state.families.get(root, ()):
            for library in kb.LIBRARIES:
                if library.family == family:
                    self.fx.rng |= library.draws

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


def _seeded(node: nodes.Call) -> bool:
    """The call is given its own seed or generator (`random_state=0`): no global draw."""
    for keyword in node.keywords or ():
        if keyword.arg in _SEED_KEYWORDS and not (
                isinstance(keyword.value, nodes.Const) and keyword.value.value is None):
            return True
    return False
