"""A code cell's outputs as comparable entries, and the comparison of two cells' entries.

A cell's outputs are compared in order: each stream (consecutive writes to one stream joined,
as Jupyter shows them), each result and display with every MIME type's data (figures are
compared byte for byte; metadata is not compared), each error's name and value (the
traceback's text is not: file names differ). Execution counts are not compared.
"""

from __future__ import annotations

import difflib
import hashlib
import math
import re
from dataclasses import dataclass
from typing import Any

from nb2cwl.checking.normalise import normalised

Entry = tuple[Any, ...]
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def entries(outputs: list[dict[str, Any]]) -> list[Entry]:
    """The normalised entries of a cell's outputs (see the module docstring)."""
    found: list[Entry] = []
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            text = _text(output.get("text", ""))
            if found and found[-1][0] == "stream" and found[-1][1] == output.get("name"):
                found[-1] = ("stream", output.get("name"), found[-1][2] + text)
            else:
                found.append(("stream", output.get("name"), text))
        elif kind in ("execute_result", "display_data"):
            data = output.get("data", {}) or {}
            found.append((kind, tuple(sorted(
                (mime, _text(value) if _binary(mime) else normalised(_text(value)))
                for mime, value in data.items()))))
        elif kind == "error":
            found.append(("error", output.get("ename", ""),
                          normalised(str(output.get("evalue", "")))))
    return [("stream", e[1], normalised(e[2])) if e[0] == "stream" else e for e in found]


def _binary(mime: str) -> bool:
    """An image in base64, compared byte for byte (an SVG is text, normalised as text)."""
    return mime.startswith("image/") and not mime.endswith("+xml")


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return value if isinstance(value, str) else str(value)


@dataclass(frozen=True)
class Comparison:
    """Whether two cells' outputs are equal, and the first difference when they are not."""

    equal: bool
    diff: str = ""
    within_tolerance: bool = False  # equal only thanks to --rtol


def compare(expected: list[Entry], actual: list[Entry], rtol: float | None = None) -> Comparison:
    """Compare a cell's reference entries with the workflow's (`rtol`: numbers in text may
    differ by that relative tolerance)."""
    if expected == actual:
        return Comparison(True)
    if rtol is not None and len(expected) == len(actual) and all(
            _close(a, b, rtol) for a, b in zip(expected, actual, strict=True)):
        return Comparison(True, within_tolerance=True)
    return Comparison(False, first_difference(expected, actual))


def _close(a: Entry, b: Entry, rtol: float) -> bool:
    """Equal but for numbers in text that differ by at most `rtol`, relatively."""
    if a[0] != b[0]:
        return False
    if a[0] in ("stream", "error"):
        return a[1] == b[1] and _close_text(a[2], b[2], rtol)
    left, right = dict(a[1]), dict(b[1])
    if set(left) != set(right):
        return False
    return all(left[m] == right[m] if m.startswith("image/")
               else _close_text(left[m], right[m], rtol) for m in left)


def _close_text(x: str, y: str, rtol: float) -> bool:
    if x == y:
        return True
    numbers_x, numbers_y = _NUMBER.findall(x), _NUMBER.findall(y)
    if _NUMBER.split(x) != _NUMBER.split(y) or len(numbers_x) != len(numbers_y):
        return False
    return all(math.isclose(float(p), float(q), rel_tol=rtol)
               for p, q in zip(numbers_x, numbers_y, strict=True))


def first_difference(expected: list[Entry], actual: list[Entry], context: int = 2) -> str:
    """A short unified diff of the first output that differs."""
    for number in range(max(len(expected), len(actual))):
        left = expected[number] if number < len(expected) else None
        right = actual[number] if number < len(actual) else None
        if left == right:
            continue
        diff = list(difflib.unified_diff(_lines(left), _lines(right), "jupyter", "workflow",
                                         n=context, lineterm=""))
        if not diff:  # the same lines: they differ in what lines do not show (line ends)
            return (f"output {number + 1} differs in characters a line does not show: "
                    f"jupyter {left!r:.200}, workflow {right!r:.200}")
        return "\n".join(diff[:12])
    return ""


def _lines(entry: Entry | None) -> list[str]:
    if entry is None:
        return ["(no output)"]
    if entry[0] == "stream":
        return [f"[{entry[1]}] {line}" for line in entry[2].splitlines()] or [f"[{entry[1]}]"]
    if entry[0] == "error":
        return [f"[error] {entry[1]}: {entry[2]}"]
    lines = []
    for mime, value in entry[1]:
        if mime.startswith("image/"):  # its size and a digest: two images of one size differ
            digest = hashlib.sha256(value.encode()).hexdigest()[:12]
            shown = f"<{len(value)} bytes of base64, sha256 {digest}...>"
        else:
            shown = value
        lines += [f"[{entry[0]} {mime}] {line}" for line in shown.splitlines()]
    return lines
