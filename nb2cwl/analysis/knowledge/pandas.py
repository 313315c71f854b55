"""pandas: display and computation options, file readers and writers, and the objects that
hold a frame or series itself (a groupby, a rolling window, an accessor, a Styler)."""

from __future__ import annotations

from nb2cwl.analysis.knowledge.model import FileCall, Library, StateKind

OPTIONS = StateKind("pandas' options (pd.set_option, pd.options)", "pandas")
#: accessors and extension types registered on pandas' classes (`@register_dataframe_accessor`)
EXTENSIONS = StateKind("pandas' classes (a registered accessor or extension type)", "pandas")

PANDAS = Library(
    family="pandas",
    modules=("pandas",),
    preloadable=True,
    settings={
        "pandas.set_option": OPTIONS, "pandas.reset_option": OPTIONS,
        "pandas.set_eng_float_format": OPTIONS,
        "pandas.plotting.register_matplotlib_converters": OPTIONS,
        "pandas.plotting.deregister_matplotlib_converters": OPTIONS,
        **{f"pandas.api.extensions.register_{kind}": EXTENSIONS for kind in (
            "dataframe_accessor", "series_accessor", "index_accessor", "extension_dtype")},
    },
    global_objects={"pandas.options": OPTIONS, "pandas.core.config.options": OPTIONS},
    file_functions={
        "pandas.read_csv": FileCall("r", 0, "filepath_or_buffer"),
        "pandas.read_table": FileCall("r", 0, "filepath_or_buffer"),
        "pandas.read_json": FileCall("r", 0, "path_or_buf"),
        "pandas.read_parquet": FileCall("r", 0, "path"),
        "pandas.read_excel": FileCall("r", 0, "io"),
        "pandas.read_pickle": FileCall("r", 0, "filepath_or_buffer"),
        "pandas.read_feather": FileCall("r", 0, "path"),
        "pandas.read_hdf": FileCall("r", 0, "path_or_buf"),
    },
    heavy=True,
)

#: Methods of pandas objects that draw from NumPy's global generator unless given
#: random_state (df.sample()).
RANDOM_METHODS = frozenset({"sample"})

#: Methods that hand the function they are given pieces of the frame or series (rows,
#: columns, groups, values): with copy-on-write (pandas 3), a change to a piece never
#: reaches the frame. (`pipe` hands the frame itself.)
PIECE_METHODS = frozenset({"apply", "transform", "agg", "aggregate", "map", "applymap",
                           "filter"})

#: Methods whose result holds the frame or series itself, not a copy: a later change to the
#: frame (a new column) shows in it, even with copy-on-write. With the type of the result,
#: whose methods compute new values and change nothing.
HOLDING_METHODS: dict[str, str] = {
    "groupby": "pandas.api.typing.DataFrameGroupBy", "rolling": "pandas.api.typing.Rolling",
    "expanding": "pandas.api.typing.Expanding",
    "ewm": "pandas.api.typing.ExponentialMovingWindow",
    "resample": "pandas.api.typing.Resampler"}
#: Attributes that hold the frame or series itself (accessors, indexers, the Styler).
HOLDING_ATTRIBUTES = frozenset({"str", "dt", "cat", "sparse", "plot", "style", "loc", "iloc",
                                "at", "iat"})
