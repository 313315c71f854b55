"""The IPython extension: `%load_ext nb2cwl` registers the `%nb2cwl` and `%%nb2cwl` magics
(see magics.py). The kernelspec "Python 3 (nb2cwl)" is stock ipykernel with it preloaded."""

from __future__ import annotations

from typing import Any


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics in `ipython`."""
    from nb2cwl.integrations.ipython.magics import Nb2CwlMagics

    ipython.register_magics(Nb2CwlMagics)
