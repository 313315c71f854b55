"""What the analysis knows about common libraries: mutating methods, file I/O, RNG, handles."""

from __future__ import annotations

from dataclasses import dataclass

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
}
#: Module prefixes whose functions return arrays or frames (np.zeros, pd.read_csv, ...).
CONSTRUCTOR_PREFIXES: dict[str, str] = {
    "numpy.": "numpy.ndarray",
    "pandas.read_": "pandas.DataFrame",
}

#: Library functions that modify an argument: qualified name -> argument positions.
MUTATING_FUNCTIONS: dict[str, tuple[int, ...]] = {
    "random.shuffle": (0,),
    "numpy.random.shuffle": (0,),
    "numpy.copyto": (0,),
    "numpy.fill_diagonal": (0,),
    "numpy.put": (0,),
    "numpy.place": (0,),
    "numpy.putmask": (0,),
    "numpy.put_along_axis": (0,),
    "heapq.heappush": (0,),
    "heapq.heappop": (0,),
    "heapq.heapify": (0,),
    "bisect.insort": (0,),
    "setattr": (0,),
    "delattr": (0,),
}

#: Methods that modify values of one known type only (DataFrame.subtract returns a new frame).
TYPE_MUTATING_METHODS: dict[str, frozenset[str]] = {
    "collections.Counter": frozenset({"subtract"}),
}

#: Calls that change a module's global state (settings, registries, the environment).
MODULE_STATE_SETTERS = frozenset(
    {"numpy.set_printoptions", "numpy.seterr", "pandas.set_option", "pandas.reset_option",
     "warnings.warn", "warnings.filterwarnings", "warnings.simplefilter",
     "warnings.resetwarnings", "os.chdir", "os.putenv", "os.unsetenv",
     "sys.setrecursionlimit", "locale.setlocale", "logging.basicConfig",
     "logging.disable", "matplotlib.rc", "matplotlib.use", "matplotlib.pyplot.rc",
     "decimal.setcontext", "socket.setdefaulttimeout"}
)

#: Decorators known to keep state between calls (a cache): calls are not independent.
STATEFUL_DECORATORS = frozenset({"lru_cache", "cache", "cached", "memoize", "memoized"})

#: Calls whose result is a one-pass iterator (with generator functions and expressions).
ITERATOR_FACTORIES = frozenset({"iter", "map", "filter", "zip", "enumerate", "reversed", "open"})

#: Heavy packages astroid must not parse to infer types (seconds each); handled syntactically.
INFERENCE_DENYLIST = frozenset(
    {"pandas", "tensorflow", "keras", "torch", "sklearn", "scipy", "matplotlib", "seaborn",
     "jax", "transformers", "polars", "pyarrow", "statsmodels", "xgboost", "lightgbm"}
)

# --- hidden state: random number generators ---------------------------------------------

#: Names in these modules that do not touch the module's global generator.
RNG_SAFE = {
    "random": frozenset({"Random", "SystemRandom"}),
    "numpy.random": frozenset(
        {"default_rng", "Generator", "RandomState", "SeedSequence", "BitGenerator",
         "PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64"}
    ),
}
RNG_STATE = {"random": "rng:random", "numpy.random": "rng:numpy"}

# --- files -------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileCall:
    """How a call touches a file: which argument holds the path, and whether it reads/writes."""

    mode: str  # "r", "w" or "rw"
    position: int = 0
    keyword: str | None = None


#: Qualified functions (module functions) that read or write a path argument.
FILE_FUNCTIONS: dict[str, FileCall] = {
    "numpy.save": FileCall("w", 0, "file"), "numpy.savez": FileCall("w", 0, "file"),
    "numpy.savez_compressed": FileCall("w", 0, "file"),
    "numpy.savetxt": FileCall("w", 0, "fname"), "numpy.load": FileCall("r", 0, "file"),
    "numpy.loadtxt": FileCall("r", 0, "fname"), "numpy.genfromtxt": FileCall("r", 0, "fname"),
    "numpy.fromfile": FileCall("r", 0, "file"),
    "pandas.read_csv": FileCall("r", 0, "filepath_or_buffer"),
    "pandas.read_table": FileCall("r", 0, "filepath_or_buffer"),
    "pandas.read_json": FileCall("r", 0, "path_or_buf"),
    "pandas.read_parquet": FileCall("r", 0, "path"),
    "pandas.read_excel": FileCall("r", 0, "io"),
    "pandas.read_pickle": FileCall("r", 0, "filepath_or_buffer"),
    "pandas.read_feather": FileCall("r", 0, "path"),
    "pandas.read_hdf": FileCall("r", 0, "path_or_buf"),
    "matplotlib.pyplot.savefig": FileCall("w", 0, "fname"),
    "matplotlib.pyplot.imread": FileCall("r", 0, "fname"),
    "matplotlib.pyplot.imsave": FileCall("w", 0, "fname"),
    "joblib.dump": FileCall("w", 1, "filename"), "joblib.load": FileCall("r", 0, "filename"),
    "torch.save": FileCall("w", 1, "f"), "torch.load": FileCall("r", 0, "f"),
    "keras.models.load_model": FileCall("r", 0, "filepath"),
    "tensorflow.keras.models.load_model": FileCall("r", 0, "filepath"),
    "os.remove": FileCall("w", 0), "os.unlink": FileCall("w", 0),
    "os.makedirs": FileCall("w", 0, "name"), "os.mkdir": FileCall("w", 0, "path"),
    "shutil.copy": FileCall("w", 1, "dst"), "shutil.copyfile": FileCall("w", 1, "dst"),
    "shutil.rmtree": FileCall("w", 0, "path"),
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
#: Methods whose path is optional: without a path argument they return a value, not a file.
OPTIONAL_PATH_METHODS = frozenset(
    {"to_csv", "to_json", "to_markdown", "to_html"}
)
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

# --- values that cannot travel between steps ----------------------------------------------

#: Constructors whose results cannot be serialized, with a remedy.
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
