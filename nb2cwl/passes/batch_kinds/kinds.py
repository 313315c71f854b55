"""The kinds of a training step's values, what each is combined with, and `Unsafe`.

See the package docstring for what each kind means.
"""

from __future__ import annotations

HELPER = "__nb2cwl_training__"

E, C, S, M, B, U = "E", "C", "S", "M", "B", "U"
REDUCED = (S, M)

#: What a value of each kind is combined with when it leaves the replicas.
COMBINE = {E: "batch", S: "sum", M: "mean", B: "sum"}


class Unsafe(Exception):
    """The code cannot run on replicas as the notebook's algorithm (the message says why)."""
