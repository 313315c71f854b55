"""The global names a function or class reads when it is called.

A value loaded from another step may hold one of the notebook's functions (`fns = [clean]`,
`STEPS = {"fill": fill}`). It is saved by name, and the loading step replays its `def`. In
Jupyter, the function sees the globals as they are when it is called, so the step must also
replay the imports and definitions its body uses (`time` in `clean`), or calling it raises a
NameError the kernel never raised.
"""

from __future__ import annotations

import types
from typing import Any


def globals_used(value: Any) -> set[str]:
    """The names the code of a function (or of a class's methods) looks up as globals,
    nested functions, lambdas and comprehensions included."""
    codes: list[types.CodeType] = []
    if isinstance(value, types.FunctionType):
        codes.append(value.__code__)
    elif isinstance(value, type):
        for member in vars(value).values():
            member = getattr(member, "__func__", member)  # staticmethod, classmethod
            if isinstance(member, types.FunctionType):
                codes.append(member.__code__)
    found: set[str] = set()
    while codes:
        code = codes.pop()
        found.update(code.co_names)  # attribute names too: the caller keeps only defined ones
        codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return found
