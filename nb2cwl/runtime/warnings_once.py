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
import os
import sys
import warnings
from collections.abc import Iterator
from typing import Any

from . import capture

WARNING = "warning"  # the event kind (capture.replay shows one as its text on stderr)
FILTERS_CHANGED = "filters"  # an event kind: every registry starts again (capture.replay: none)
_STDLIB_SHOW = warnings.showwarning


@contextlib.contextmanager
def recording() -> Iterator[None]:
    """While the loop's code runs: a warning shown to the running cell becomes a WARNING
    event. A notebook that replaced `warnings.showwarning` itself keeps its own."""
    if warnings.showwarning is not _STDLIB_SHOW:
        yield
        return
    # each change of the filters (catch_warnings too) empties the registries; where this
    # Python has no such hook, a warning shown twice by one process is never dropped
    mutated = getattr(warnings, "_filters_mutated", None)

    def filters_mutated(*args: Any, **kwargs: Any) -> Any:
        target = capture.current()
        if target is not None:
            target.marker(FILTERS_CHANGED)
        return mutated(*args, **kwargs)  # type: ignore[misc]

    warnings.showwarning = _record
    if mutated is not None:
        warnings._filters_mutated = filters_mutated  # type: ignore[attr-defined]
    try:
        yield
    finally:
        if mutated is not None:
            warnings._filters_mutated = mutated  # type: ignore[attr-defined]
        if warnings.showwarning is _record:
            warnings.showwarning = _STDLIB_SHOW


def _record(message: Any, category: type[Warning], filename: str, lineno: int,
            file: Any = None, line: str | None = None) -> None:
    target = capture.current()
    if file is not None or target is None:
        _STDLIB_SHOW(message, category, filename, lineno, file, line)
        return
    text = warnings.formatwarning(message, category, filename, lineno, line)
    shown = {"text": text, "message": str(message), "filename": filename, "lineno": lineno,
             "categories": [_name(c) for c in category.__mro__],
             "module": _module(filename, lineno), "process": os.getpid()}
    shown["action"] = _action(shown)  # under the filters in force now
    target.warning(shown)


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
    """The events without the warnings the kernel's registry would have kept back.

    Should one process have shown the same key twice with no change of the filters between,
    this model of the registry is not the process's: that warning is never dropped."""
    events = sorted(events, key=lambda event: event[0])
    trusted = _trusted_keys(events)
    seen: set[tuple] = set()
    kept = []
    for event in events:
        if event[1] == FILTERS_CHANGED:
            seen = {key for key in seen if key[0] == "once"}  # onceregistry is never emptied
            continue
        if event[1] == WARNING:
            key = _key(event[2])
            if key is not None and key in trusted and key in seen:
                continue
            if key is not None:
                seen.add(key)
        kept.append(event)
    return kept


def _trusted_keys(events: list[capture.Event]) -> set[tuple]:
    """The keys no process showed twice between two changes of the filters."""
    shown: dict[int | None, set[tuple]] = {}
    keys, twice = set(), set()
    for _moment, kind, payload in events:
        if kind == FILTERS_CHANGED:
            shown.clear()
        elif kind == WARNING:
            key = _key(payload)
            if key is None:
                continue
            keys.add(key)
            own = shown.setdefault(payload.get("process"), set())
            if key in own:
                twice.add(key)
            own.add(key)
    return keys - twice


def _key(shown: dict[str, Any]) -> tuple | None:
    """What the registry keys this warning by under the action the filters gave it; None
    when it is shown every time (or the action or the warning's module cannot be told)."""
    action = shown.get("action")
    category = shown["categories"][0]
    if shown["module"] is None:
        return None
    if action == "default":
        return ("default", shown["module"], shown["message"], category, shown["lineno"])
    if action == "module":
        return ("module", shown["module"], shown["message"], category)
    if action == "once":
        return ("once", shown["message"], category)
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
