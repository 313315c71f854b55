"""The shape of the knowledge tables: what a library does to the process and to its values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

#: Treatments of state that a fresh step process does not have.
REPLAY = "replay"  # the statement that set it runs again in every later step that may see it
TOGETHER = "together"  # the cells that set it and those after it that may see it share a step


@dataclass(frozen=True)
class StateKind:
    """Process-wide state a call or a store changes, and how a step boundary treats it.

    `owner` is the module whose import makes the state observable: a step replays a setting
    only once (and as soon as) that module is imported; "" means always (os, sys, warnings).
    `observers` is "family" when only cells using the owner's library can see the state,
    "all" when any later cell may (the environment, the working directory).
    """

    name: str  # as explain shows it
    owner: str
    treatment: str = REPLAY
    observers: str = "family"


@dataclass(frozen=True)
class FileCall:
    """How a call touches a file: which argument holds the path, and whether it reads/writes."""

    mode: str  # "r", "w" or "rw"
    position: int = 0
    keyword: str | None = None


@dataclass(frozen=True)
class Library:
    """What the analysis knows about one library, keyed by its top-level modules.

    A call into a library with no entry may change process-wide state the analysis cannot
    see; one with an entry changes only what the entry lists (`settings`, `seeds`).
    """

    family: str
    modules: tuple[str, ...]
    #: qualified calls that change process-wide state (`pd.set_option`)
    settings: Mapping[str, StateKind] = field(default_factory=dict)
    #: objects that are process-wide state: storing into them or calling their methods
    #: changes it (`plt.rcParams[k] = v`, `os.environ[k] = v`); a qualified name, or a
    #: qualified call whose result is such an object (`logging.getLogger`)
    global_objects: Mapping[str, StateKind] = field(default_factory=dict)
    #: qualified calls that seed the library's own random generator, which no step can hand on
    seeds: Mapping[str, str] = field(default_factory=dict)
    #: hidden random state (`rng:numpy`, `rng:random`) that code using the library may draw
    #: from without saying so (scikit-learn without random_state, Keras layer seeds)
    draws: frozenset[str] = frozenset()
    #: the methods of its objects that may draw so, when the object has no seed of its own
    #: (None: any method); the arrays its functions return never draw
    drawing_methods: frozenset[str] | None = None
    #: why the library's objects cannot cross a step boundary exactly, if they cannot
    uncarried_values: str | None = None
    mutating_functions: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    file_functions: Mapping[str, FileCall] = field(default_factory=dict)
    #: qualified functions whose result shares memory with an argument (np.asarray)
    sharing_functions: frozenset[str] = frozenset()
    #: qualified calls whose result keeps its arguments (a Pipeline its estimators, a
    #: ChainMap its dicts): a later change to an argument shows in the result, and back
    keeping_functions: frozenset[str] = frozenset()
    #: the library's classes keep their constructor arguments as given (scikit-learn's
    #: estimators, PyTorch's optimizers): `Pipeline([("s", scaler)])` holds scaler itself
    classes_keep_arguments: bool = False
    #: the objects a call returns are parts of one whole that refer to each other (a figure
    #: and its axes): names unpacked from one result share objects
    linked_results: bool = False
    #: too big for astroid to parse when inferring types (seconds each)
    heavy: bool = False
    #: importing it before the notebook's first statement cannot be told from importing it
    #: there: it reads no file of the working folder, starts no thread a fork would lose,
    #: and its settings come from the environment and from how the shell presents itself
    #: (which the step server presents as a step does); the step server imports it once
    preloadable: bool = False
