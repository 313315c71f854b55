"""What the analysis knows about libraries: one table per library, gathered here.

Each library module describes one or a few libraries as data (`model.Library`): the
process-wide state their calls change and how a step boundary treats it (replayed, or the
cells kept together), the random state they draw from, whether their objects can cross a
step boundary exactly, the arguments they modify and the files they touch. The walker and
the dataflow read these tables; none of them holds a branch for a particular library.
"""

from __future__ import annotations

from functools import lru_cache

from nb2cwl.analysis.knowledge.deep_learning import TENSORFLOW, TORCH
from nb2cwl.analysis.knowledge.model import REPLAY, TOGETHER, FileCall, Library, StateKind
from nb2cwl.analysis.knowledge.numpy import NUMPY, VIEW_METHODS
from nb2cwl.analysis.knowledge.others import LIBRARIES as OTHERS
from nb2cwl.analysis.knowledge.pandas import (
    HOLDING_ATTRIBUTES,
    HOLDING_METHODS,
    PANDAS,
    PIECE_METHODS,
    RANDOM_METHODS,
)
from nb2cwl.analysis.knowledge.plotting import MATPLOTLIB, SEABORN
from nb2cwl.analysis.knowledge.python import (
    ARGUMENT_MUTATING_METHODS,
    CONSTRUCTOR_TYPES,
    COPYING_FUNCTIONS,
    COPYING_METHODS,
    FILE_METHODS,
    IMMUTABLE_TYPES,
    IMPORTS_WITHOUT_EFFECTS,
    ITERATOR_FACTORIES,
    LOOP_STATE_CALLS,
    MUTATING_METHODS,
    OPAQUE_IO_FUNCTIONS,
    OPAQUE_READ_FUNCTIONS,
    OPTIONAL_PATH_METHODS,
    PATH_METHODS,
    PURE_METHODS,
    RNG_SAFE,
    RNG_STATE,
    SCALAR_TYPES,
    STATE_READING_METHODS,
    STATEFUL_DECORATORS,
    STDLIB,
    STORING_METHODS,
    TYPE_MUTATING_METHODS,
    UNSERIALIZABLE_CONSTRUCTORS,
    WEAK_REFERENCES,
)
from nb2cwl.analysis.knowledge.python import KNOWN_TYPES as _BUILTIN_KNOWN_TYPES
from nb2cwl.analysis.knowledge.randomness import (
    DRAWING_SETTINGS,
    DRAWS_THROUGH_ARGUMENTS,
    ESTIMATOR_KEYWORDS,
    GENERATOR_TYPES,
    SEED_KEYWORDS,
    never_draws,
)
from nb2cwl.analysis.knowledge.science import JOBLIB, SCIPY, SKLEARN, STATSMODELS

LIBRARIES: tuple[Library, ...] = (
    NUMPY, PANDAS, MATPLOTLIB, SEABORN, SKLEARN, SCIPY, STATSMODELS, JOBLIB, TENSORFLOW,
    TORCH, *OTHERS, STDLIB)

#: Types whose methods are known: only MUTATING_METHODS (or inplace=True) modify them.
KNOWN_TYPES = _BUILTIN_KNOWN_TYPES | frozenset(HOLDING_METHODS.values())

_BY_MODULE: dict[str, Library] = {}
for _library in reversed(LIBRARIES):  # a third-party entry wins over a stdlib name clash
    for _module in _library.modules:
        _BY_MODULE[_module] = _library

MUTATING_FUNCTIONS: dict[str, tuple[int, ...]] = {
    k: v for library in LIBRARIES for k, v in library.mutating_functions.items()}
FILE_FUNCTIONS: dict[str, FileCall] = {
    k: v for library in LIBRARIES for k, v in library.file_functions.items()}
SHARING_FUNCTIONS = frozenset().union(*(library.sharing_functions for library in LIBRARIES))
KEEPING_FUNCTIONS = frozenset().union(*(library.keeping_functions for library in LIBRARIES))
#: Heavy packages astroid must not parse to infer types (seconds each); handled syntactically.
INFERENCE_DENYLIST = frozenset(m for library in LIBRARIES if library.heavy
                               for m in library.modules)


def library_of(qualified: str | None) -> Library | None:
    """The library a qualified name (`numpy.random.seed`) belongs to; None when unknown."""
    if not qualified:
        return None
    return _BY_MODULE.get(qualified.split(".")[0].lstrip("."))


def family_of(qualified: str | None) -> str | None:
    """The family of a qualified name: its library's, or its top-level module when unknown."""
    if not qualified or qualified.startswith("."):
        return None
    library = library_of(qualified)
    return library.family if library is not None else qualified.split(".")[0]


@lru_cache(maxsize=4096)
def _by_prefix(table: str, qualified: str) -> object | None:
    library = library_of(qualified)
    if library is None:
        return None
    entries = getattr(library, table)
    parts = qualified.split(".")
    for end in range(len(parts), 0, -1):
        found = entries.get(".".join(parts[:end]))
        if found is not None:
            return found
    return None


def keeps_arguments(qualified: str | None) -> bool:
    """Whether a call's result keeps (holds) its arguments themselves: a view of an array
    (`np.split`), a container or wrapper (`ChainMap`, `SimpleNamespace`, `itertools.chain`),
    or an object of a library whose classes keep what they are given (`Pipeline`)."""
    if not qualified:
        return False
    if qualified in SHARING_FUNCTIONS or qualified in KEEPING_FUNCTIONS:
        return True
    library = library_of(qualified)
    last = qualified.rsplit(".", 1)[-1]
    return bool(library is not None and library.classes_keep_arguments
                and last[:1].isupper())


def results_linked(family: str | None) -> bool:
    """Whether the objects of a library's results refer to each other (a figure and its
    axes, an axis and its lines)."""
    return any(library.linked_results and library.family == family for library in LIBRARIES)


def state_set_by_call(qualified: str | None) -> StateKind | None:
    """The process-wide state a call changes (`pandas.set_option`), if any."""
    if not qualified:
        return None
    found = _by_prefix("settings", qualified)
    return found if isinstance(found, StateKind) else None


def state_object(qualified: str | None) -> StateKind | None:
    """The process-wide state an object (or a call's result) is, if it is one
    (`os.environ`, `matplotlib.rcParams`, `logging.getLogger(...)`)."""
    if not qualified:
        return None
    found = _by_prefix("global_objects", qualified)
    return found if isinstance(found, StateKind) else None


def state_stored_into(qualified: str | None) -> StateKind | None:
    """The process-wide state a store into `qualified` changes
    (`torch.backends.cudnn.deterministic = True`, `pd.options.display.max_rows = 5`)."""
    if not qualified:
        return None
    found = _by_prefix("global_objects", qualified) or _by_prefix("settings", qualified)
    return found if isinstance(found, StateKind) else None


def seed_of(qualified: str | None) -> str | None:
    """What a call seeds, when it seeds a framework's own random generator."""
    if not qualified:
        return None
    found = _by_prefix("seeds", qualified)
    return found if isinstance(found, str) else None


__all__ = [
    "ARGUMENT_MUTATING_METHODS",
    "CONSTRUCTOR_TYPES",
    "COPYING_FUNCTIONS",
    "COPYING_METHODS",
    "DRAWING_SETTINGS",
    "DRAWS_THROUGH_ARGUMENTS",
    "ESTIMATOR_KEYWORDS",
    "FILE_FUNCTIONS",
    "FILE_METHODS",
    "GENERATOR_TYPES",
    "HOLDING_ATTRIBUTES",
    "HOLDING_METHODS",
    "IMMUTABLE_TYPES",
    "IMPORTS_WITHOUT_EFFECTS",
    "INFERENCE_DENYLIST",
    "ITERATOR_FACTORIES",
    "KEEPING_FUNCTIONS",
    "KNOWN_TYPES",
    "LIBRARIES",
    "LOOP_STATE_CALLS",
    "MUTATING_FUNCTIONS",
    "MUTATING_METHODS",
    "OPAQUE_IO_FUNCTIONS",
    "OPAQUE_READ_FUNCTIONS",
    "OPTIONAL_PATH_METHODS",
    "PATH_METHODS",
    "PIECE_METHODS",
    "PURE_METHODS",
    "RANDOM_METHODS",
    "REPLAY",
    "RNG_SAFE",
    "RNG_STATE",
    "SCALAR_TYPES",
    "SEED_KEYWORDS",
    "SHARING_FUNCTIONS",
    "STATEFUL_DECORATORS",
    "STATE_READING_METHODS",
    "STORING_METHODS",
    "TOGETHER",
    "TYPE_MUTATING_METHODS",
    "UNSERIALIZABLE_CONSTRUCTORS",
    "VIEW_METHODS",
    "WEAK_REFERENCES",
    "FileCall",
    "Library",
    "StateKind",
    "family_of",
    "keeps_arguments",
    "library_of",
    "never_draws",
    "results_linked",
    "seed_of",
    "state_object",
    "state_set_by_call",
    "state_stored_into",
]
