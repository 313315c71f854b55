"""What the analysis knows about the notebook's global namespace as it walks the cells."""

from __future__ import annotations

from dataclasses import dataclass, field

from nb2cwl.analysis.effects import Effects, FunctionSummary
from nb2cwl.analysis.knowledge.model import StateKind


@dataclass(frozen=True)
class Definition:
    """A top-level import, def or class statement that a later step replays instead of loading.

    `requires` are the definitions its definition-time expressions (decorators, defaults,
    base classes) need, resolved where the statement stands.
    """

    key: str  # unique: "<cell>:<statement number>"
    cell_index: int
    names: tuple[str, ...]
    code: str
    requires: tuple[Definition, ...] = ()
    star: bool = False
    parameter: str | None = None  # a parameter of the notebook: replayed with the run's value
    # `code` is the statement's own text in its cell, starting at this line of the cell (None:
    # astroid's rendering, where the text is not the statement alone, e.g. `import os; x = 1`)
    line: int | None = None


@dataclass(frozen=True)
class NotebookNames:
    """What the whole notebook's code says of its names (string_values.notebook_names)."""

    plain_lists: frozenset[str] = frozenset()  # used only as plain lists of strings
    bound_once: frozenset[str] = frozenset()  # bound once, nowhere else
    declared_global: frozenset[str] = frozenset()  # a function may rebind them when called
    opaque: bool = False  # code the analysis cannot read may bind any name


@dataclass
class NamespaceState:
    """The notebook's global names as known at the current point of the walk."""

    imports: dict[str, str] = field(default_factory=dict)  # name -> qualified module/object
    functions: dict[str, FunctionSummary] = field(default_factory=dict)
    definitions: dict[str, Definition] = field(default_factory=dict)  # replayable bindings
    const_strings: dict[str, str] = field(default_factory=dict)
    #: a name that is one of these constants (`for i in range(8)`, `path = f"part{i}.csv"` in
    #: that loop), while the loop that binds it runs
    choices: dict[str, frozenset[str | int | float]] = field(default_factory=dict)
    #: a list or set of strings known to be among these (`paths.append(path)` in that loop)
    string_items: dict[str, frozenset[str]] = field(default_factory=dict)
    #: code the analysis cannot read may have bound any global (`from m import *`, exec)
    unseen_bindings: bool = False
    #: what the whole notebook's code says of its names (string_values.notebook_names)
    names: NotebookNames = field(default_factory=NotebookNames)
    types: dict[str, str] = field(default_factory=dict)  # syntactically known value types
    immutable_items: set[str] = field(default_factory=set)  # collections of numbers/strings
    iterators: set[str] = field(default_factory=set)  # one-pass: using them uses them up
    #: names that keep a function touching files, to call later (`reader = open`)
    file_functions: set[str] = field(default_factory=set)
    aliases: dict[str, frozenset[str]] = field(default_factory=dict)
    #: names holding the same items, not the same object (`d = frame.copy()`): a change to
    #: an item through one changes the other; a store into one does not
    item_sharing: dict[str, frozenset[str]] = field(default_factory=dict)
    star_imports: list[Definition] = field(default_factory=list)
    families: dict[str, frozenset[str]] = field(default_factory=dict)  # name -> libraries
    state_objects: dict[str, StateKind] = field(default_factory=dict)  # logger, rc, env, ...
    held_calls: dict[str, Effects] = field(default_factory=dict)  # callables held in a value
    views: dict[str, frozenset[str]] = field(default_factory=dict)  # array views: name -> base
    bound: set[str] = field(default_factory=set)  # every global the notebook has bound
    #: a name holding a library's function or class (`make = LogisticRegression`), or the
    #: loop variable over a collection of only those: calling it is calling one of these
    library_callables: dict[str, frozenset[str]] = field(default_factory=dict)
    #: lists, tuples and sets of a library's functions and classes, and dicts of them
    #: (values) under constant keys: what their items are
    callable_collections: dict[str, frozenset[str]] = field(default_factory=dict)
    #: objects of a library that draws, made with their own seed (or that never draw)
    seeded: set[str] = field(default_factory=set)
    #: a name holding a callable that changes what it is given or holds (`f = push`,
    #: `partial(push, acc)`, `add = results.append`): whether a call changes what it is
    #: given, and the names whose objects it changes besides
    changing_callables: dict[str, tuple[bool, frozenset[str]]] = field(default_factory=dict)

    def forget_strings_of(self, name: str) -> None:
        """`name` may be bound to another string, or its list hold others, from here on."""
        self.const_strings.pop(name, None)
        self.choices.pop(name, None)
        self.string_items.pop(name, None)

    def forget_strings(self) -> None:
        """Code the analysis cannot read ran: any global may be another string now."""
        self.unseen_bindings = True
        self.const_strings.clear()
        self.choices.clear()
        self.string_items.clear()

    def alias_group(self, name: str) -> frozenset[str]:
        """`name` and every name that may refer to the same (or a containing) object."""
        return self.aliases.get(name, frozenset({name}))

    def link(self, a: str, b: str) -> None:
        """Record that `a` and `b` may share an object from now on."""
        group = self.alias_group(a) | self.alias_group(b)
        for member in group:
            self.aliases[member] = group

    def share_items(self, a: str, b: str) -> None:
        """Record that `a` and `b` may hold the same items from now on."""
        self.item_sharing[a] = self.item_sharing.get(a, frozenset()) | {b}
        self.item_sharing[b] = self.item_sharing.get(b, frozenset()) | {a}

    def hand_off_group(self, name: str) -> frozenset[str]:
        """The names handed on together with `name`, in one file, so that what they share
        stays shared: its aliases, the copies holding the same items, and theirs."""
        group = self.alias_group(name)
        if not self.item_sharing or not any(m in self.item_sharing for m in group):
            return group  # no copies: as most names, with no work per member
        found, todo = set(group), list(group)
        while todo:
            for other in self.item_sharing.get(todo.pop(), ()):
                for member in self.alias_group(other) - found:
                    found.add(member)
                    todo.append(member)
        return frozenset(found)

    def unlink(self, name: str) -> None:
        """`name` was rebound: it no longer shares an object with its old group. What held
        the same items through it still does: its copies, its old object's other names."""
        former = self.item_sharing.pop(name, frozenset())
        for other in former:
            rest = self.item_sharing.get(other, frozenset()) - {name}
            if rest:
                self.item_sharing[other] = rest
            else:
                self.item_sharing.pop(other, None)
        still = sorted(set(former) | (self.alias_group(name) - {name}))
        if former:
            for position, a in enumerate(still):
                for b in still[position + 1:]:
                    self.share_items(a, b)
        group = self.aliases.pop(name, None)
        if group is None:
            return
        rest = group - {name}
        for member in rest:
            if len(rest) > 1:
                self.aliases[member] = rest
            else:
                self.aliases.pop(member, None)

    def forget(self, name: str) -> None:
        """`name` was rebound to an ordinary value."""
        self.imports.pop(name, None)
        self.functions.pop(name, None)
        self.definitions.pop(name, None)
        self.forget_strings_of(name)
        self.types.pop(name, None)
        self.immutable_items.discard(name)
        self.iterators.discard(name)
        self.families.pop(name, None)
        self.state_objects.pop(name, None)
        self.held_calls.pop(name, None)
        self.seeded.discard(name)
        self.library_callables.pop(name, None)
        self.callable_collections.pop(name, None)
        self.changing_callables.pop(name, None)
