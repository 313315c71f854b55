"""Capture what a cell shows: streams, its result, display() calls and matplotlib figures."""

from __future__ import annotations

import base64
import io
import sys
import time
from typing import Any

_current: OutputCapture | None = None


class _Stream(io.TextIOBase):
    def __init__(self, capture: OutputCapture, name: str, echo: Any) -> None:
        self._capture = capture
        self._name = name
        self._echo = echo

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._capture.stream(self._name, text)
        if self._echo is not None:
            self._echo.write(text)
        return len(text)

    def flush(self) -> None:
        if self._echo is not None:
            self._echo.flush()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._echo.fileno() if self._echo is not None else -1


#: ipykernel sends a stream's text this long after its first unsent write.
FLUSH_INTERVAL = 0.2

Event = tuple[float, str, Any]  # (seconds since the capture began, "stream"|"output", payload)


class OutputCapture:
    """Collects a cell's outputs as nbformat output dictionaries, in the order Jupyter shows.

    Writes are recorded with their time; `outputs` replays them the way ipykernel sends them:
    each stream is buffered and sent FLUSH_INTERVAL after its first unsent write, and a
    display, result or error first sends whatever both streams hold. So a quick cell shows
    all its stdout, then all its stderr, as in Jupyter.
    """

    def __init__(self, echo: bool = True) -> None:
        self.events: list[Event] = []
        self._echo = echo
        self._saved: tuple[Any, Any] | None = None
        self._start = time.monotonic()

    @property
    def outputs(self) -> list[dict[str, Any]]:
        """The outputs as Jupyter would have them."""
        return replay(self.events)

    @property
    def duration(self) -> float:
        """Seconds since the capture began."""
        return time.monotonic() - self._start

    def __enter__(self) -> OutputCapture:
        global _current
        self._saved = (sys.stdout, sys.stderr)
        sys.stdout = _Stream(self, "stdout", self._saved[0] if self._echo else None)
        sys.stderr = _Stream(self, "stderr", self._saved[1] if self._echo else None)
        _current = self
        return self

    def __exit__(self, *exc: object) -> None:
        global _current
        flush_figures()
        if self._saved is not None:
            sys.stdout, sys.stderr = self._saved
        _current = None

    def _add(self, kind: str, payload: Any) -> None:
        self.events.append((time.monotonic() - self._start, kind, payload))

    def stream(self, name: str, text: str) -> None:
        """Text written to stdout or stderr."""
        if text:
            self._add("stream", (name, text))

    def result(self, value: Any, execution_count: int) -> None:
        """The value of the cell's last expression."""
        data, metadata = format_value(value)
        self._add("output", {"output_type": "execute_result", "data": data,
                             "metadata": metadata, "execution_count": execution_count})

    def display(self, value: Any) -> None:
        """A display() call, or a shown figure."""
        data, metadata = format_value(value)
        self._add("output", {"output_type": "display_data", "data": data,
                             "metadata": metadata})

    def raw_display(self, data: dict[str, Any], metadata: dict[str, Any] | None = None) -> None:
        """A display of an already formatted MIME bundle (e.g. from a %%html cell)."""
        self._add("output", {"output_type": "display_data", "data": data,
                             "metadata": metadata or {}})

    def error(self, ename: str, evalue: str, traceback: list[str]) -> None:
        """The cell raised."""
        self._add("output", {"output_type": "error", "ename": ename, "evalue": evalue,
                             "traceback": traceback})


def replay(events: list[Event]) -> list[dict[str, Any]]:
    """Outputs from timed events, sent as ipykernel sends them (see OutputCapture)."""
    outputs: list[dict[str, Any]] = []
    pending: dict[str, list[Any]] = {}  # stream -> [first write time, text]

    def send(name: str) -> None:
        text = pending.pop(name)[1]
        last = outputs[-1] if outputs else None
        if last is not None and last["output_type"] == "stream" and last["name"] == name:
            last["text"] += text
        else:
            outputs.append({"output_type": "stream", "name": name, "text": text})

    def send_due(now: float) -> None:
        for name in sorted(pending, key=lambda n: pending[n][0]):
            if now >= pending[name][0] + FLUSH_INTERVAL:
                send(name)

    for moment, kind, payload in sorted(events, key=lambda event: event[0]):
        send_due(moment)
        if kind == "stream":
            name, text = payload
            if name in pending:
                pending[name][1] += text
            else:
                pending[name] = [moment, text]
        else:
            for name in ("stdout", "stderr"):
                if name in pending:
                    send(name)
            outputs.append(payload)
    for name in ("stdout", "stderr"):
        if name in pending:
            send(name)
    return outputs


def shifted(events: list[Event], offset: float) -> list[Event]:
    """The same events, `offset` seconds later (to lay out steps on one timeline)."""
    return [(moment + offset, kind, payload) for moment, kind, payload in events]


def display(*objs: Any, **kwargs: Any) -> None:
    """Jupyter's display(), writing into the running cell's outputs."""
    target = _current
    for obj in objs:
        if target is None:
            print(repr(obj))
        elif kwargs.get("raw") and isinstance(obj, dict):
            target.raw_display(obj)
        else:
            target.display(obj)


def format_value(value: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A MIME bundle for `value`, exactly as IPython formats it when IPython is installed."""
    try:
        from IPython.core.formatters import DisplayFormatter
    except ImportError:
        return _fallback_format(value), {}
    try:
        data, metadata = _formatter(DisplayFormatter).format(value)
    except Exception:  # a broken _repr_*_ must not lose the cell's other outputs
        return _fallback_format(value), {}
    return _jsonable(data), _jsonable(metadata)


_FORMATTER: Any = None


def _formatter(cls: Any) -> Any:
    global _FORMATTER
    if _FORMATTER is None:
        _FORMATTER = cls()
    return _FORMATTER


def _fallback_format(value: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"text/plain": repr(value)}
    for mime, method in (("text/html", "_repr_html_"), ("text/markdown", "_repr_markdown_"),
                         ("image/svg+xml", "_repr_svg_"), ("text/latex", "_repr_latex_"),
                         ("image/png", "_repr_png_"), ("application/json", "_repr_json_")):
        render = getattr(value, method, None)
        if callable(render):
            try:
                rendered = render()
            except Exception:
                continue
            if rendered is not None:
                data[mime] = rendered
    return _jsonable(data)


def _jsonable(data: dict[str, Any]) -> dict[str, Any]:
    clean: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, bytes):
            value = base64.b64encode(value).decode("ascii")
        clean[key] = value
    return clean


def flush_figures() -> None:
    """Show every open matplotlib figure as display_data and close it (the inline backend)."""
    if _current is None or "matplotlib.pyplot" not in sys.modules:
        return
    plt = sys.modules["matplotlib.pyplot"]
    try:
        numbers = plt.get_fignums()
    except Exception:
        return
    for number in numbers:
        figure = plt.figure(number)
        buffer = io.BytesIO()
        try:
            figure.savefig(buffer, format="png", bbox_inches="tight")
        except Exception as exc:  # keep the text form even if rendering fails
            sys.__stderr__.write(f"nb2cwl: could not render figure {number}: {exc}\n")
            continue
        _current.raw_display({"text/plain": repr(figure),
                              "image/png": base64.b64encode(buffer.getvalue()).decode("ascii")})
    plt.close("all")
