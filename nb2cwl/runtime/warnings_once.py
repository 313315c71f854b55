"""A scattered loop shows a warning as often as the one process of the kernel would.

Python shows a warning once per place by default: the first time, its key goes into the
warning's module registry, and the same warning from the same line is not shown again (the
"default" action; "module" once per module, "once" once at all, "always" every time). A loop
split over several map processes has one registry per process, so each chunk would show the
warning once more. The steps of a scattered cell therefore record each warning they show, with
what its key is made of, as an event of its own (`recording`); the gather, which lays out the
whole cell's events in order, keeps only those the kernel's registry would have let through
(`shown_once`), under the notebook's own filters (the gather replays the same settings).
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator
from typing import Any

from . import capture

WARNING = "warning"  # the event kind (capture.replay shows one as its text on stderr)
_STDLIB_SHOW = warnings.showwarning


@contextlib.contextmanager
def recording() -> Iterator[None]:
    """While the loop's code runs: a warning shown to the running cell becomes a WARNING
    event. A notebook that replaced `warnings.showwarning` itself keeps its own."""
    if warnings.showwarning is not _STDLIB_SHOW:
        yield
        return
    warnings.showwarning = _record
    try:
        yield
    finally:
        if warnings.showwarning is _record:
            warnings.showwarning = _STDLIB_SHOW


def _record(message: Any, category: type[Warning], filename: str, lineno: int,
            file: Any = None, line: str | None = None) -> None:
    target = capture.current()
    if file is not None or target is None:
        _STDLIB_SHOW(message, category, filename, lineno, file, line)
        return
    text = warnings.formatwarning(message, category, filename, lineno, line)
    target.warning({
        "text": text, "message": str(message), "filename": filename, "lineno": lineno,
        "categories": [_name(c) for c in category.__mro__], "module": _module(filename, lineno),
    })


def _name(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def _module(filename: str, lineno: int) -> str | None:
    """The module whose registry keeps the warning: that of the frame it is attributed to."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == filename and frame.f_lineno == lineno:
            return frame.f_globals.get("__name__")
        frame = frame.f_back
    return None


def shown_once(events: list[capture.Event]) -> list[capture.Event]:
    """The events without the warnings the kernel's registry would have kept back."""
    seen: set[tuple] = set()
    kept = []
    for event in sorted(events, key=lambda event: event[0]):
        if event[1] == WARNING:
            key = _key(event[2])
            if key is not None and key in seen:
                continue
            if key is not None:
                seen.add(key)
        kept.append(event)
    return kept


def _key(shown: dict[str, Any]) -> tuple | None:
    """What the registry keys this warning by under the action the filters give it; None
    when it is shown every time (or the action cannot be told)."""
    action = _action(shown)
    category = shown["categories"][0]
    if action == "default":
        return (shown["module"], shown["message"], category, shown["lineno"])
    if action == "module":
        return (shown["module"], shown["message"], category)
    if action == "once":
        return (shown["message"], category)
    return None


def _action(shown: dict[str, Any]) -> str | None:
    """The action of the first filter that matches, as `warnings.warn_explicit` finds it."""
    for action, message, category, module, lineno in warnings.filters:
        if message is not None and not message.match(shown["message"]):
            continue
        if _name(category) not in shown["categories"]:
            continue
        if module is not None:
            if shown["module"] is None:
                return None  # not known: show it, as the chunk did
            if not module.match(shown["module"]):
                continue
        if lineno and lineno != shown["lineno"]:
            continue
        return action
    return warnings.defaultaction if shown["module"] is not None else None
