"""Python itself and its standard library: builtins, methods of the built-in types, stdlib."""

from __future__ import annotations

import sys

from nb2cwl.analysis.knowledge.model import TOGETHER, FileCall, Library, StateKind

#: Methods that modify their receiver whatever its type (list, dict, set, deque, ndarray, ...).
MUTATING_METHODS = frozenset(
    {
        "append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse",
        "update", "add", "discard", "setdefault", "popitem", "appendleft", "extendleft",
        "popleft", "rotate", "intersection_update", "difference_update",
        "symmetric_difference_update", "fill", "resize", "put", "itemset", "partition",
        "setflags", "__setitem__", "__delitem__", "__iadd__", "set_index_inplace",
        "move_to_end", "shuffle", "seed",
    }
)

#: Methods that modify an argument whatever the receiver: a random generator's shuffle
#: (`np.random.default_rng(0).shuffle(x)`, `random.Random(1).shuffle(x)`), by position.
ARGUMENT_MUTATING_METHODS: dict[str, tuple[int, ...]] = {"shuffle": (0,)}

#: Methods that put their argument into the receiver (a later change to it changes both).
STORING_METHODS = frozenset({"append", "add", "extend", "insert", "update", "setdefault",
                             "appendleft", "extendleft", "put", "push", "register"})

#: Methods and builtins whose result is a new container holding the receiver's items (a
#: shallow copy: list.copy(), dict(d); pandas' copy() and assign() copy the data, not the
#: Python objects in it): a store into the result leaves the receiver as it is, a change to
#: an item changes both.
COPYING_METHODS = frozenset({"copy", "assign"})
COPYING_FUNCTIONS = frozenset({"list", "dict", "set", "copy.copy"})

#: Methods of process-wide objects (a logger, rcParams, os.environ) that only read or use them.
STATE_READING_METHODS = frozenset({
    "debug", "info", "warning", "warn", "error", "exception", "critical", "log", "fatal",
    "isEnabledFor", "getEffectiveLevel", "getChild", "hasHandlers", "get", "keys", "values",
    "items", "copy", "index", "count", "find_all", "__getitem__", "__contains__"})

#: Types whose methods are known: only MUTATING_METHODS (or inplace=True) modify them.
KNOWN_TYPES = frozenset(
    {
        "builtins.list", "builtins.dict", "builtins.set", "builtins.str", "builtins.int",
        "builtins.float", "builtins.bool", "builtins.tuple", "builtins.frozenset",
        "builtins.bytes", "builtins.complex", "builtins.range", "numpy.ndarray",
        ".ndarray", "pandas.DataFrame", "pandas.Series", "pandas.core.frame.DataFrame",
        "pandas.core.series.Series", "collections.deque", "collections.OrderedDict",
        "collections.Counter", "collections.defaultdict",
    }
)
IMMUTABLE_TYPES = frozenset(
    {"builtins.str", "builtins.int", "builtins.float", "builtins.bool", "builtins.tuple",
     "builtins.frozenset", "builtins.bytes", "builtins.complex", "builtins.range",
     "builtins.NoneType"}
)

#: Values that cannot be changed and hold nothing that can: their identity never matters
#: (a tuple or frozenset may hold objects that can).
SCALAR_TYPES = IMMUTABLE_TYPES - {"builtins.tuple", "builtins.frozenset"}

#: Methods that compute a new value from their receiver and change neither it nor their
#: arguments, whatever the receiver (NumPy's and pandas' conventions, Python's): a function
#: that only calls these on its parameter does not modify it. (Methods that may, with
#: `inplace=True`, are counted as changes when given it.)
PURE_METHODS = frozenset(
    {"mean", "sum", "std", "var", "median", "min", "max", "prod", "cumsum", "cumprod",
     "argmax", "argmin", "argsort", "idxmax", "idxmin", "any", "all", "count", "nunique",
     "unique", "value_counts", "describe", "quantile", "round", "clip", "abs", "copy", "assign",
     "astype", "tolist", "to_list", "to_numpy", "to_dict", "item", "reshape", "ravel",
     "flatten", "transpose", "dot", "corr", "cov", "diff", "pct_change", "shift", "head",
     "tail", "isna", "notna", "isnull", "notnull", "dropna", "fillna", "sort_values",
     "sort_index", "reset_index", "set_index", "rename", "drop", "drop_duplicates",
     "groupby", "agg", "aggregate", "merge", "join", "to_string", "to_frame", "squeeze",
     "nonzero", "get", "keys", "values", "items", "split", "strip", "lower", "upper",
     "replace", "startswith", "endswith", "format", "encode", "decode", "splitlines",
     "predict", "predict_proba", "predict_log_proba", "decision_function", "score",
     "transform", "get_params", "__len__", "__contains__", "index", "find"}
)

#: Modules whose import changes nothing a later import of another library could see (it
#: sets no environment variable, option or path): a step server may import the notebook's
#: libraries that follow them before them (analysis/preload.py). matplotlib reads its
#: settings file and picks its backend, which concerns no other library.
IMPORTS_WITHOUT_EFFECTS = frozenset({
    "os", "sys", "math", "cmath", "re", "json", "time", "random", "itertools", "functools",
    "collections", "pathlib", "typing", "warnings", "datetime", "string", "statistics",
    "glob", "csv", "pickle", "copy", "dataclasses", "logging", "operator", "textwrap",
    "decimal", "fractions", "heapq", "bisect", "enum", "abc", "io", "contextlib", "shutil",
    "tempfile", "uuid", "hashlib", "pprint", "gc", "matplotlib"})

#: Call targets (qualified) whose result type is known without inference.
CONSTRUCTOR_TYPES: dict[str, str] = {
    "list": "builtins.list", "dict": "builtins.dict", "set": "builtins.set",
    "sorted": "builtins.list", "str": "builtins.str", "int": "builtins.int",
    "float": "builtins.float", "tuple": "builtins.tuple", "len": "builtins.int",
    "sum": "builtins.float", "round": "builtins.float", "range": "builtins.range",
    "pandas.DataFrame": "pandas.DataFrame", "pandas.Series": "pandas.Series",
    "pandas.concat": "pandas.DataFrame", "pandas.merge": "pandas.DataFrame",
    "collections.deque": "collections.deque", "collections.Counter": "collections.Counter",
    "collections.OrderedDict": "collections.OrderedDict",
    "collections.defaultdict": "collections.defaultdict",
    # random generators: every draw advances them
    "numpy.random.default_rng": "numpy.random.Generator",
    "numpy.random.RandomState": "numpy.random.RandomState",
    "random.Random": "random.Random",
}

#: Methods that modify values of one known type only (DataFrame.subtract returns a new frame).
TYPE_MUTATING_METHODS: dict[str, frozenset[str]] = {
    "collections.Counter": frozenset({"subtract"}),
}

#: Decorators known to keep state between calls (a cache): calls are not independent.
STATEFUL_DECORATORS = frozenset({"lru_cache", "cache", "cached", "memoize", "memoized"})

#: Calls whose result is a one-pass iterator (with generator functions and expressions).
ITERATOR_FACTORIES = frozenset({"iter", "map", "filter", "zip", "enumerate", "reversed", "open"})

#: Random-number generators of modules whose functions draw from one global state.
RNG_STATE = {"random": "rng:random", "numpy.random": "rng:numpy"}
#: Names in those modules that do not touch the module's global generator.
RNG_SAFE = {
    "random": frozenset({"Random", "SystemRandom"}),
    "numpy.random": frozenset(
        {"default_rng", "Generator", "RandomState", "SeedSequence", "BitGenerator",
         "PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64"}
    ),
}

#: Methods that read or write a path argument whatever the receiver (df.to_csv, fig.savefig).
FILE_METHODS: dict[str, FileCall] = {
    "to_csv": FileCall("w", 0, "path_or_buf"), "to_json": FileCall("w", 0, "path_or_buf"),
    "to_parquet": FileCall("w", 0, "path"), "to_excel": FileCall("w", 0, "excel_writer"),
    "to_pickle": FileCall("w", 0, "path"), "to_feather": FileCall("w", 0, "path"),
    "to_hdf": FileCall("w", 0, "path_or_buf"), "to_markdown": FileCall("w", 0, "buf"),
    "to_html": FileCall("w", 0, "buf"), "savefig": FileCall("w", 0, "fname"),
    "save": FileCall("w", 0, "filepath"), "save_weights": FileCall("w", 0, "filepath"),
    "load_weights": FileCall("r", 0, "filepath"), "tofile": FileCall("w", 0, "fid"),
    "write_text": FileCall("w"), "write_bytes": FileCall("w"),
    "read_text": FileCall("r"), "read_bytes": FileCall("r"),
}
#: pathlib's methods that look at the path they are called on (a folder: what is in it), or
#: change it: `Path("out").iterdir()`, `IMAGES.mkdir(parents=True)`.
PATH_METHODS: dict[str, str] = {
    **dict.fromkeys(("iterdir", "glob", "rglob", "walk", "exists", "is_dir", "is_file",
                     "stat", "lstat", "samefile", "resolve", "owner", "group"), "r"),
    **dict.fromkeys(("mkdir", "touch", "unlink", "rmdir", "chmod", "symlink_to",
                     "hardlink_to"), "w"),
    **dict.fromkeys(("rename", "replace"), "rw"),
}
#: Methods whose path is optional: without a path argument they return a value, not a file.
OPTIONAL_PATH_METHODS = frozenset({"to_csv", "to_json", "to_markdown", "to_html"})
#: Calls that run other programs or touch files in ways the analysis cannot follow.
OPAQUE_IO_FUNCTIONS = frozenset(
    {"os.system", "os.popen", "os.chdir", "os.rename", "os.replace", "subprocess.run",
     "subprocess.call", "subprocess.check_call", "subprocess.check_output",
     "subprocess.Popen", "shutil.move", "shutil.copytree"}
)
#: Calls that list or look at files the analysis cannot name (they read, never write).
OPAQUE_READ_FUNCTIONS = frozenset(
    {"glob.glob", "glob.iglob", "os.listdir", "os.walk", "os.scandir", "os.path.exists",
     "os.path.isfile", "os.path.isdir", "os.path.getsize", "os.stat"}
)

#: Constructors whose results cannot be serialized, with what they are.
UNSERIALIZABLE_CONSTRUCTORS: dict[str, str] = {
    "open": "an open file",
    "socket.socket": "a socket",
    "sqlite3.connect": "a database connection",
    "threading.Lock": "a lock",
    "threading.RLock": "a lock",
    "threading.Thread": "a thread",
    "multiprocessing.Pool": "a process pool",
    "subprocess.Popen": "a running process",
    "tensorflow.data.Dataset.from_tensor_slices": "a tf.data.Dataset",
}

#: Weak references: they cannot be saved (or a proxy saves a copy of its object), so the
#: cells from one that makes one to the last that uses it share a step.
WEAK_REFERENCES = frozenset({
    "weakref.ref", "weakref.proxy", "weakref.WeakMethod", "weakref.WeakValueDictionary",
    "weakref.WeakKeyDictionary", "weakref.WeakSet", "weakref.finalize"})

_ITERTOOLS = ("accumulate", "batched", "chain", "chain.from_iterable", "combinations",
              "combinations_with_replacement", "compress", "cycle", "dropwhile", "filterfalse",
              "groupby", "islice", "pairwise", "permutations", "product", "repeat", "starmap",
              "takewhile", "tee", "zip_longest")

#: Calls whose result holds the very objects passed to them (containers, views, wrappers,
#: shallow copies, iterators over them, picks among them).
_KEEPING = frozenset({
    "types.SimpleNamespace", "types.MappingProxyType", "collections.ChainMap",
    "collections.OrderedDict", "collections.defaultdict", "collections.deque",
    "collections.UserDict", "collections.UserList", "copy.copy", "dataclasses.replace",
    "functools.partial", "functools.partialmethod", "operator.methodcaller", "typing.cast",
    "random.choice", "random.choices", "random.sample", "heapq.nlargest", "heapq.nsmallest",
    "heapq.merge", "contextlib.closing", *(f"itertools.{name}" for name in _ITERTOOLS),
    *WEAK_REFERENCES})

#: Calls whose effect depends on what the same process did before: run in several processes,
#: they behave differently (a warning is shown once per place and process).
LOOP_STATE_CALLS = frozenset({"warnings.warn"})

# --- process-wide state of the standard library ------------------------------------------

WARNINGS = StateKind("warning filters", "", observers="all")
LOGGING = StateKind("logging configuration", "logging", observers="all")
ENVIRONMENT = StateKind("environment variables (os.environ)", "", observers="all")
IMPORT_PATH = StateKind("the module search path (sys.path)", "", observers="all")
WORKING_DIRECTORY = StateKind("the working directory", "", TOGETHER, "all")
INTERPRETER = StateKind("interpreter settings (recursion limit, locale, default timeout)",
                        "", observers="all")
DECIMAL = StateKind("the decimal module's context", "decimal", TOGETHER, "all")
PROCESS = StateKind("process-wide hooks (signal handlers, exit hooks, the garbage collector)",
                    "", TOGETHER, "all")

STDLIB = Library(
    family="python",
    modules=(*sorted(sys.stdlib_module_names), "builtins"),
    settings={
        "warnings.filterwarnings": WARNINGS, "warnings.simplefilter": WARNINGS,
        "warnings.resetwarnings": WARNINGS,
        "logging.basicConfig": LOGGING, "logging.disable": LOGGING,
        "logging.captureWarnings": LOGGING, "logging.addLevelName": LOGGING,
        "logging.setLoggerClass": LOGGING,
        "os.putenv": ENVIRONMENT, "os.unsetenv": ENVIRONMENT,
        "os.chdir": WORKING_DIRECTORY,
        "sys.setrecursionlimit": INTERPRETER, "locale.setlocale": INTERPRETER,
        "socket.setdefaulttimeout": INTERPRETER, "sys.set_int_max_str_digits": INTERPRETER,
        "decimal.setcontext": DECIMAL,
        "signal.signal": PROCESS, "atexit.register": PROCESS, "gc.disable": PROCESS,
        "gc.enable": PROCESS, "gc.freeze": PROCESS, "os.umask": PROCESS,
        "sys.settrace": PROCESS, "sys.setprofile": PROCESS, "faulthandler.enable": PROCESS,
        "importlib.reload": PROCESS, "mimetypes.add_type": PROCESS,
        "copyreg.pickle": PROCESS, "codecs.register": PROCESS, "time.tzset": PROCESS,
    },
    global_objects={
        "os.environ": ENVIRONMENT, "sys.path": IMPORT_PATH, "logging.getLogger": LOGGING,
        "logging.root": LOGGING, "decimal.getcontext": DECIMAL,
        "decimal.DefaultContext": DECIMAL, "sys.modules": PROCESS, "builtins": PROCESS,
        "sys.stdout": PROCESS, "sys.stderr": PROCESS, "sys.stdin": PROCESS,
    },
    mutating_functions={
        "random.shuffle": (0,), "heapq.heappush": (0,), "heapq.heappop": (0,),
        "heapq.heapify": (0,), "heapq.heappushpop": (0,), "heapq.heapreplace": (0,),
        "bisect.insort": (0,), "bisect.insort_left": (0,), "bisect.insort_right": (0,),
        "setattr": (0,), "delattr": (0,),
        **dict.fromkeys((f"operator.{name}" for name in (
            "setitem", "delitem", "iadd", "iand", "iconcat", "ior", "isub", "ixor", "imul")),
            (0,)),
    },
    keeping_functions=_KEEPING,
    file_functions={
        "os.remove": FileCall("w", 0), "os.unlink": FileCall("w", 0),
        "os.makedirs": FileCall("w", 0, "name"), "os.mkdir": FileCall("w", 0, "path"),
        "shutil.copy": FileCall("w", 1, "dst"), "shutil.copyfile": FileCall("w", 1, "dst"),
        "shutil.rmtree": FileCall("w", 0, "path"),
    },
)
