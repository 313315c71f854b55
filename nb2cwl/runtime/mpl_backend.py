"""A matplotlib backend that behaves like Jupyter's inline backend inside a step."""

from __future__ import annotations

from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg

from .capture import flush_figures

FigureCanvas = FigureCanvasAgg
FigureManager = FigureManagerBase


def show(*args: object, **kwargs: object) -> None:
    """plt.show(): the figures become outputs of the running cell, then close."""
    flush_figures()
