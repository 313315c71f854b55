"""NumPy: print options and floating-point error handling, its global random generator,
functions that fill an argument, and those whose result is a view of one."""

from __future__ import annotations

from nb2cwl.analysis.knowledge.model import FileCall, Library, StateKind

PRINT_OPTIONS = StateKind("NumPy's print options", "numpy")
ERROR_HANDLING = StateKind("NumPy's floating-point error handling (np.seterr)", "numpy")

NUMPY = Library(
    family="numpy",
    modules=("numpy",),
    preloadable=True,
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
        "numpy.lib.stride_tricks.sliding_window_view", "numpy.lib.stride_tricks.broadcast_to",
        # lists of views, and other views of their argument
        "numpy.split", "numpy.array_split", "numpy.hsplit", "numpy.vsplit", "numpy.dsplit",
        "numpy.unstack", "numpy.broadcast_arrays", "numpy.flip", "numpy.fliplr",
        "numpy.flipud", "numpy.rot90", "numpy.diag", "numpy.permute_dims",
        "numpy.matrix_transpose", "numpy.asmatrix", "numpy.require", "numpy.asfortranarray",
        "numpy.asarray_chkfinite", "numpy.ma.array", "numpy.ma.masked_array",
        "numpy.ma.MaskedArray", "numpy.ma.asarray", "numpy.ma.asanyarray",
    }),
    # iterators and wrappers holding the array or the function given
    keeping_functions=frozenset({"numpy.nditer", "numpy.ndenumerate", "numpy.vectorize",
                                 "numpy.frompyfunc"}),
)

#: Methods of an array whose result is a view sharing its memory.
VIEW_METHODS = frozenset({"view", "reshape", "ravel", "transpose", "swapaxes", "squeeze",
                          "diagonal", "T", "mT", "real", "imag", "flat", "base"})
