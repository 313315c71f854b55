"""NumPy: print options and floating-point error handling, its global random generator,
functions that fill an argument, and those whose result is a view of one."""

from __future__ import annotations

from nb2cwl.analysis.knowledge.model import FileCall, Library, StateKind

PRINT_OPTIONS = StateKind("NumPy's print options", "numpy")
ERROR_HANDLING = StateKind("NumPy's floating-point error handling (np.seterr)", "numpy")

NUMPY = Library(
    family="numpy",
    modules=("numpy",),
    settings={
        "numpy.set_printoptions": PRINT_OPTIONS, "numpy.set_string_function": PRINT_OPTIONS,
        "numpy.seterr": ERROR_HANDLING, "numpy.seterrcall": ERROR_HANDLING,
        "numpy.core.arrayprint.set_printoptions": PRINT_OPTIONS,
    },
    mutating_functions={
        "numpy.random.shuffle": (0,), "numpy.copyto": (0,), "numpy.fill_diagonal": (0,),
        "numpy.put": (0,), "numpy.place": (0,), "numpy.putmask": (0,),
        "numpy.put_along_axis": (0,), "numpy.random.Generator.shuffle": (0,),
    },
    file_functions={
        "numpy.save": FileCall("w", 0, "file"), "numpy.savez": FileCall("w", 0, "file"),
        "numpy.savez_compressed": FileCall("w", 0, "file"),
        "numpy.savetxt": FileCall("w", 0, "fname"), "numpy.load": FileCall("r", 0, "file"),
        "numpy.loadtxt": FileCall("r", 0, "fname"),
        "numpy.genfromtxt": FileCall("r", 0, "fname"),
        "numpy.fromfile": FileCall("r", 0, "file"),
    },
    sharing_functions=frozenset({
        "numpy.asarray", "numpy.asanyarray", "numpy.ascontiguousarray", "numpy.reshape",
        "numpy.ravel", "numpy.transpose", "numpy.squeeze", "numpy.expand_dims",
        "numpy.swapaxes", "numpy.moveaxis", "numpy.atleast_1d", "numpy.atleast_2d",
        "numpy.atleast_3d", "numpy.broadcast_to", "numpy.diagonal", "numpy.real",
        "numpy.imag", "numpy.frombuffer", "numpy.lib.stride_tricks.as_strided",
        "numpy.lib.stride_tricks.sliding_window_view",
    }),
)

#: Methods of an array whose result is a view sharing its memory.
VIEW_METHODS = frozenset({"view", "reshape", "ravel", "transpose", "swapaxes", "squeeze",
                          "diagonal", "T", "real", "imag", "flat", "base"})
