"""What the analysis learns of a value bound to a name.

A binding records the strings it may be and the strings a list of them holds
(analysis/string_values.py), a syntactic type, whether the value is an iterator, which
libraries' objects it holds (families), whether it is process-wide state
(`rc = plt.rcParams`), callables it holds, and whether it is a view of an array or a dict.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from astroid import nodes

from nb2cwl.analysis import knowledge as kb
from nb2cwl.analysis.effects import Effects, Hold
from nb2cwl.analysis.names import (
    root_name,
)
from nb2cwl.analysis.scalars import constant, scalar_collection
from nb2cwl.analysis.string_values import collection_strings

if TYPE_CHECKING:
    from nb2cwl.analysis.state import NamespaceState

#: Types whose keys(), values() and items() are live views.
_MAPPINGS = frozenset({"builtins.dict", "collections.OrderedDict", "collections.defaultdict",
                       "collections.Counter"})


class BoundValues:
    """Mixin for the effect walker: what a bound value is (see the module docstring)."""

    fx: Effects
    state: NamespaceState
    cell_index: int

    # provided by the effect walker
    syntactic_type: Callable[[nodes.NodeNG], str | None]
    qualify: Callable[[nodes.NodeNG], str | None]
    held_effects: Callable[[nodes.NodeNG], Effects | None]
    changed_by_calling: Callable[[nodes.NodeNG], tuple[bool, frozenset[str]] | None]
    seeded_object: Callable[[nodes.NodeNG], bool]
    _strings: Callable[[nodes.NodeNG | None], frozenset[str] | None]

    def _learn_value(self, name: str, value: nodes.NodeNG) -> None:
        from nb2cwl.analysis.summaries import summarize_function

        state = self.state
        strings = self._strings(value)  # `IMAGES = Path() / "images"`: a path too
        if strings is not None and len(strings) == 1:
            state.const_strings[name] = next(iter(strings))
        elif strings:
            state.choices[name] = strings  # `path = f"part{i}.csv"` in `for i in range(8)`
        items = collection_strings(value, state) if name in state.names.plain_lists else None
        if items is not None:  # `paths = []`: what `paths.append(path)` adds is known too
            state.string_items[name] = items
        known = self.syntactic_type(value)
        if known:
            state.types[name] = known
        if self._immutable_items(value):
            state.immutable_items.add(name)
        if self._one_pass(value):
            state.iterators.add(name)
        if self.seeded_object(value):
            state.seeded.add(name)
        callables = self.library_callables_of(value)
        if callables is not None:
            state.library_callables[name] = callables
        items = self.callable_items(value)
        if items is not None:
            state.callable_collections[name] = items
        if isinstance(value, nodes.Lambda):
            state.functions[name] = summarize_function(value, state, self.cell_index, set())
        kind = self._state_of_value(value)
        if kind is not None:
            state.state_objects[name] = kind
        held = self.held_effects(value) if not isinstance(value, nodes.Lambda) else None
        if held is not None:
            state.held_calls[name] = held
        changed = self.changed_by_calling(value)
        if changed is not None:
            state.changing_callables[name] = changed
        if isinstance(value, nodes.Call) and self.qualify(value.func) in kb.WEAK_REFERENCES:
            tag = f"object:{name}"
            state.families[name] = state.families.get(name, frozenset()) | {tag}
            self.fx.holds.append(Hold(tag, value.lineno or 0, f"{name} holds weak references, "
                                                               "which no step can hand on"))
        base = self._view_base(value)
        if base is not None:
            self.fx.views.append((value.lineno or 0, name, base, "array"))
        base = self._mapping_view_base(value)
        if base is not None:
            self.fx.views.append((value.lineno or 0, name, base, "mapping"))

    def library_callables_of(self, value: nodes.NodeNG) -> frozenset[str] | None:
        """`LogisticRegression` or `sklearn.svm.SVC` as a value: the qualified callable, when
        it is one the knowledge describes (calling it then changes nothing else)."""
        if not isinstance(value, (nodes.Name, nodes.Attribute)):
            return None
        if isinstance(value, nodes.Name) and value.name in self.state.library_callables:
            return self.state.library_callables[value.name]
        if root_name(value) not in self.state.imports:
            return None
        qualified = self.qualify(value)
        if (qualified is None or kb.library_of(qualified) is None
                or kb.state_set_by_call(qualified) is not None or kb.seed_of(qualified)):
            return None  # a library nb2cwl does not know, a setting, a seed: not that simple
        return frozenset({qualified})

    def callable_items(self, value: nodes.NodeNG) -> frozenset[str] | None:
        """The library callables a literal list, tuple or set holds, or a dict's values under
        constant keys (`{"lr": LogisticRegression, "tree": DecisionTreeClassifier}`)."""
        if isinstance(value, (nodes.List, nodes.Tuple, nodes.Set)):
            parts = value.elts
        elif isinstance(value, nodes.Dict) and all(
                isinstance(key, nodes.Const) for key, _ in value.items):
            parts = [item for _, item in value.items]
        else:
            return None
        found: set[str] = set()
        for part in parts:
            callables = self.library_callables_of(part)
            if callables is None:
                return None
            found |= callables
        return frozenset(found) or None

    def families_of(self, value: nodes.NodeNG) -> frozenset[str]:
        """The libraries whose objects a value may be or hold: those of the names it reads
        and of the libraries and notebook functions it calls."""
        found: set[str] = set()
        for node in [value, *value.nodes_of_class((nodes.Name, nodes.Call))]:
            if isinstance(node, nodes.Name):
                found |= {f for f in self.state.families.get(node.name, ()) if ":" not in f}
                summary = self.state.functions.get(node.name)
                if summary is not None:
                    found |= summary.effects.families
            elif isinstance(node, nodes.Call):
                family = kb.family_of(self.qualify(node.func))
                if family and family != "python":
                    found.add(family)
        return frozenset(found)

    def _view_base(self, value: nodes.NodeNG) -> str | None:
        """The array `value` may be a view of (`a[:3]`, `a.T`, `a.reshape(...)`,
        `np.asarray(a)`): writing through one then changes the other, which no step can
        hand on (arrays are saved one by one)."""
        node = value
        if isinstance(node, nodes.Call):
            qualified = self.qualify(node.func)
            if qualified in kb.SHARING_FUNCTIONS and node.args:
                node = node.args[0]
            elif isinstance(node.func, nodes.Attribute) and node.func.attrname in (
                    kb.VIEW_METHODS):
                node = node.func.expr
            else:
                return None
        elif isinstance(node, nodes.Attribute):
            if node.attrname not in kb.VIEW_METHODS:
                return None
            node = node.expr
        elif isinstance(node, nodes.Subscript):
            node = node.value
        else:
            return None
        root = root_name(node)
        if root is None or root in self.state.imports:
            return None
        kind = self.state.types.get(root)
        if kind == "numpy.ndarray" or (kind is None and "numpy" in self.state.families.get(
                root, ())):
            return root
        return None

    def _mapping_view_base(self, value: nodes.NodeNG) -> str | None:
        """The dict `value` is a live view of (`d.keys()`, `d.values()`, `d.items()`,
        `MappingProxyType(d)`): saved and loaded, a view shows a copy of its dict, so a
        later change to the dict would not show in it."""
        if not isinstance(value, nodes.Call):
            return None
        func = value.func
        if self.qualify(func) == "types.MappingProxyType" and value.args:
            node = value.args[0]
        elif (isinstance(func, nodes.Attribute) and func.attrname in ("keys", "values", "items")
              and not value.args and not value.keywords):
            node = func.expr
        else:
            return None
        root = root_name(node)
        if root is None or root in self.state.imports or root in self.state.functions:
            return None
        kind = self.state.types.get(root)
        if kind is not None and kind not in _MAPPINGS:
            return None  # df.keys() is an Index, s.items() an iterator
        return root

    def _one_pass(self, value: nodes.NodeNG) -> bool:
        """The value is an iterator: whoever iterates it, or calls next() on it, uses it up."""
        if isinstance(value, nodes.GeneratorExp):
            return True
        if not isinstance(value, nodes.Call):
            return False
        qualified = self.qualify(value.func)
        if qualified in kb.ITERATOR_FACTORIES or (qualified or "").startswith("itertools."):
            return True
        summary = (self.state.functions.get(value.func.name)
                   if isinstance(value.func, nodes.Name) else None)
        return summary is not None and summary.is_generator

    def _immutable_items(self, value: nodes.NodeNG) -> bool:
        """A collection whose items are all numbers or strings: range(...), [1, 'a'], a dict
        of them, ... (not an empty one: what it will hold is not known)."""
        if isinstance(value, (nodes.List, nodes.Tuple, nodes.Set)):
            return bool(value.elts) and all(constant(e, self.state) for e in value.elts)
        if isinstance(value, nodes.Dict):  # {"control": 0.0, "a": 3.0}: keys and values
            return bool(value.items) and all(constant(k, self.state) and constant(v, self.state)
                                             for k, v in value.items)
        if isinstance(value, nodes.Call) and isinstance(value.func, nodes.Name):
            if value.func.name == "range":
                return True
            if value.func.name in ("list", "tuple", "sorted", "set") and len(value.args) == 1:
                return self._immutable_items(value.args[0]) or (
                    isinstance(value.args[0], nodes.Name)
                    and value.args[0].name in self.state.immutable_items)
        if isinstance(value, (nodes.ListComp, nodes.SetComp, nodes.GeneratorExp)):
            return scalar_collection(value, self.state)  # [f"part{i}.csv" for i in range(4)]
        return False

    def _state_of_value(self, value: nodes.NodeNG) -> kb.StateKind | None:
        """The process-wide state a value is (`plt.rcParams`, `logging.getLogger()`)."""
        if isinstance(value, nodes.Call):
            return kb.state_object(self.qualify(value.func))
        if isinstance(value, (nodes.Attribute, nodes.Name)):
            return kb.state_object(self.qualify(value))
        return None
