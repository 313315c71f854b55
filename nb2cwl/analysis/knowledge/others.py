"""Other libraries common in notebooks, known to change no process-wide state except what
their entries list."""

from __future__ import annotations

from nb2cwl.analysis.knowledge.magics import SHELL_SETTINGS
from nb2cwl.analysis.knowledge.model import TOGETHER, Library, StateKind

PLOTLY_RENDERER = StateKind("plotly's default renderer and template", "plotly")
BOKEH_OUTPUT = StateKind("bokeh's output target", "bokeh", TOGETHER)
SYMPY_PRINTING = StateKind("sympy's printing", "sympy")
POLARS_CONFIG = StateKind("polars' display configuration", "polars")
XARRAY_OPTIONS = StateKind("xarray's options", "xarray")
#: `tqdm.pandas()` adds progress_apply, progress_map, ... to pandas' classes
TQDM_PANDAS = StateKind("pandas' classes (tqdm.pandas() adds progress_apply)", "pandas")
TRANSFORMERS_LOGGING = StateKind("transformers' logging verbosity", "transformers")
#: the inline backend's figure formats (`set_matplotlib_formats('svg')`, as `%config
#: InlineBackend.figure_formats`): every later figure shows in them
INLINE_FIGURES = StateKind("the inline backend's figure formats (set_matplotlib_formats)",
                           "matplotlib")

LIBRARIES = (
    Library("tqdm", ("tqdm",), settings={
        f"tqdm.{module}tqdm.pandas": TQDM_PANDAS for module in (
            "", "auto.", "notebook.", "std.", "autonotebook.", "rich.", "asyncio.")}),
    Library("PIL", ("PIL",)),
    Library("requests", ("requests", "urllib3", "httpx")),
    Library("yaml", ("yaml", "ruamel")),
    Library("h5py", ("h5py", "pyarrow", "tables", "openpyxl", "xlrd", "netCDF4")),
    Library("imaging", ("cv2", "skimage", "imageio")),
    Library("graphs", ("networkx", "igraph")),
    Library("boosting", ("xgboost", "lightgbm", "catboost"), draws=frozenset({"rng:numpy"}),
            classes_keep_arguments=True, heavy=True),
    Library("plotly", ("plotly",), global_objects={
        "plotly.io.renderers": PLOTLY_RENDERER, "plotly.io.templates": PLOTLY_RENDERER},
        heavy=True),
    Library("altair", ("altair",), settings={
        "altair.renderers.enable": StateKind("altair's renderer", "altair"),
        "altair.data_transformers.enable": StateKind("altair's data transformer", "altair")},
        heavy=True),
    Library("bokeh", ("bokeh",), settings={"bokeh.io.output_notebook": BOKEH_OUTPUT,
                                           "bokeh.plotting.output_notebook": BOKEH_OUTPUT,
                                           "bokeh.io.output_file": BOKEH_OUTPUT},
            heavy=True),
    Library("sympy", ("sympy",), settings={"sympy.init_printing": SYMPY_PRINTING},
            heavy=True),
    Library("polars", ("polars",), global_objects={"polars.Config": POLARS_CONFIG},
            heavy=True),
    Library("xarray", ("xarray",), settings={"xarray.set_options": XARRAY_OPTIONS},
            heavy=True),
    Library("nlp", ("nltk", "spacy", "gensim"), heavy=True),
    Library("transformers", ("transformers", "datasets", "tokenizers"), settings={
        f"transformers.logging.{name}": TRANSFORMERS_LOGGING for name in (
            "set_verbosity", "set_verbosity_error", "set_verbosity_warning",
            "set_verbosity_info", "disable_progress_bar")},
        seeds={"transformers.set_seed": "the random seeds transformers sets (including "
                                        "PyTorch's)"}, heavy=True),
    Library("ipython", ("IPython", "ipywidgets", "ipykernel", "matplotlib_inline"),
            settings={name: INLINE_FIGURES for name in (
                "matplotlib_inline.backend_inline.set_matplotlib_formats",
                "matplotlib_inline.backend_inline.set_matplotlib_close",
                "IPython.display.set_matplotlib_formats",
                "IPython.display.set_matplotlib_close",
                "IPython.core.display.set_matplotlib_formats",
                "IPython.core.display.set_matplotlib_close",
                "IPython.core.pylabtools.select_figure_formats")},
            global_objects={  # `InteractiveShell.ast_node_interactivity = "all"`, as %config
                "IPython.core.interactiveshell.InteractiveShell": SHELL_SETTINGS,
                "IPython.InteractiveShell": SHELL_SETTINGS,
                "IPython.get_ipython": SHELL_SETTINGS,
                "IPython.core.getipython.get_ipython": SHELL_SETTINGS,
                "get_ipython": SHELL_SETTINGS}),
    Library("nb2cwl", ("nb2cwl",)),
)
