"""`from __future__` features: in a kernel they hold for every later cell, so a step compiles
its cells, and the definitions it replays, with those of the cells before them."""

from __future__ import annotations
import __future__


def compiler_flags(features: list[str]) -> int:
    """The compiler flags that turn `features` ("annotations", ...) on."""
    flags = 0
    for feature in features:
        flags |= getattr(getattr(__future__, feature, None), "compiler_flag", 0)
    return flags
