"""matplotlib and seaborn: rcParams, styles and themes, backends; figure files. A figure, its
axes and their artists refer to each other: they are parts of one whole."""

from __future__ import annotations

from nb2cwl.analysis.knowledge.model import FileCall, Library, StateKind

RC = StateKind("matplotlib's settings (rcParams, styles, seaborn themes)", "matplotlib")
BACKEND = StateKind("matplotlib's backend", "matplotlib")

MATPLOTLIB = Library(
    family="matplotlib",
    modules=("matplotlib", "mpl_toolkits"),
    settings={
        "matplotlib.rc": RC, "matplotlib.pyplot.rc": RC, "matplotlib.rcdefaults": RC,
        "matplotlib.pyplot.rcdefaults": RC, "matplotlib.rc_file": RC,
        "matplotlib.pyplot.rc_file": RC, "matplotlib.rc_file_defaults": RC,
        "matplotlib.style.use": RC, "matplotlib.pyplot.style.use": RC,
        "matplotlib.pyplot.xkcd": RC, "matplotlib.use": BACKEND,
        "matplotlib.pyplot.switch_backend": BACKEND, "matplotlib.pyplot.ion": BACKEND,
        "matplotlib.pyplot.ioff": BACKEND, "matplotlib.font_manager.fontManager.addfont": RC,
        "matplotlib.units.registry": RC,
    },
    global_objects={"matplotlib.rcParams": RC, "matplotlib.pyplot.rcParams": RC,
                    "matplotlib.rcParamsDefault": RC},
    file_functions={
        "matplotlib.pyplot.savefig": FileCall("w", 0, "fname"),
        "matplotlib.pyplot.imread": FileCall("r", 0, "fname"),
        "matplotlib.pyplot.imsave": FileCall("w", 0, "fname"),
    },
    linked_results=True,
    heavy=True,
)

SEABORN = Library(
    family="seaborn",
    modules=("seaborn",),
    # seaborn's themes are matplotlib's rcParams: any later plot sees them
    settings={f"seaborn.{name}": RC for name in (
        "set", "set_theme", "set_style", "set_context", "set_palette", "set_color_codes",
        "reset_defaults", "reset_orig")},
    classes_keep_arguments=True,  # FacetGrid(df) holds df
    linked_results=True,
    heavy=True,
)
