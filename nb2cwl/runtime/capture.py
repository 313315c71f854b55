"""Capture what a cell shows: streams, its result, display() calls and matplotlib figures."""

from __future__ import annotations

import base64
import io
import re
import sys
import time
from typing import Any

from . import descriptors

_current: OutputCapture | None = None
_runtime_figures = True  # False where matplotlib's own inline backend shows the figures


def current() -> OutputCapture | None:
    """The capture of the code running now, if any."""
    return _current


def set_runtime_figures(enabled: bool) -> None:
    """Whether a capture shows the open figures when it ends (the plain runtime's inline
    backend); IPython's shell has matplotlib_inline do that at the end of each cell."""
    global _runtime_figures
    _runtime_figures = enabled


class _Stream(io.TextIOBase):
    """The step's sys.stdout or sys.stderr for the whole run, as the kernel's are: text goes
    to the running cell's capture (and to the step's log). A logging handler or any object
    that kept `sys.stderr` in one cell still reaches the cell running later."""

    def __init__(self, name: str, echo: Any) -> None:
        self._name = name
        self._echo = echo

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        target = _current
        if target is not None:
            descriptors.catch_up()
            target.stream(self._name, text)
        if target is None or target.echo:
            self._echo.write(text)
        return len(text)

    def flush(self) -> None:
        """As the kernel's streams do, send what is pending now (logging flushes each
        record, print(..., flush=True) its text)."""
        if _current is not None:
            _current.flush(self._name)
        self._echo.flush()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "UTF-8"  # as ipykernel's streams say (pandas keeps it as display.encoding)

    @property
    def name(self) -> str:
        return f"<{self._name}>"

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._echo.fileno()


_installed = False


def _install_streams() -> None:
    """Once per process, as the kernel does: a cell that replaces sys.stdout keeps it so.
    What reaches descriptors 1 and 2 otherwise (subprocesses, C code) goes to the running cell
    too (descriptors.py); Python's streams echo to the step's log past those pipes."""
    global _installed
    if not _installed:
        logs = descriptors.forward(_from_descriptor)
        out, err = logs if logs is not None else (sys.stdout, sys.stderr)
        sys.stdout = _Stream("stdout", out)
        sys.stderr = _Stream("stderr", err)
        _installed = True


_hidden: list[re.Pattern[str]] = []


def hide_descriptor_lines(pattern: re.Pattern[str]) -> None:
    """From now on, drop the lines C code writes to the step's stdout or stderr that match
    `pattern`: a library's own log lines about how the step runs the cell (several training
    workers), which the kernel's run of the same cell does not cause."""
    if pattern not in _hidden:
        _hidden.append(pattern)


def _from_descriptor(name: str, text: str) -> None:
    """Text a subprocess or C code wrote to the step's stdout or stderr."""
    target = _current
    if target is None:
        return
    if _hidden:
        text = "".join(line for line in text.splitlines(keepends=True)
                       if not any(p.search(line) for p in _hidden))
    if text:
        target.stream(name, text)


#: ipykernel sends a stream's text this long after its first unsent write.
FLUSH_INTERVAL = 0.2

Event = tuple[float, str, Any]  # (seconds since the capture began, kind, payload); kind is
#                 "stream", "flush", "output", "update" (a display update), "clear" or
#                 "warning" (a scattered loop's, shown on stderr: warnings_once.py) or
#                 "filters" (its warnings' filters changed; shows nothing)
DISPLAY_ID = "nb2cwl_display_id"  # kept on a display output until the notebook is written


class OutputCapture:
    """Collects a cell's outputs as nbformat output dictionaries, in the order Jupyter shows.

    Writes are recorded with their time; `outputs` replays them the way ipykernel sends them:
    each stream is buffered and sent FLUSH_INTERVAL after its first unsent write, and a
    display, result or error first sends whatever both streams hold. So a quick cell shows
    all its stdout, then all its stderr, as in Jupyter.
    """

    def __init__(self, echo: bool = True) -> None:
        self.events: list[Event] = []
        self.echo = echo  # also write the streams to the step's log
        self.listener: Any = None  # called after each change (live progress, runtime/live.py)
        self._outer: OutputCapture | None = None
        self._start = time.monotonic()

    @property
    def outputs(self) -> list[dict[str, Any]]:
        """The outputs as Jupyter would have them (with the display ids and the updates of
        earlier cells' displays the assembler needs: `shown` drops them)."""
        return replay(self.events)

    @property
    def duration(self) -> float:
        """Seconds since the capture began."""
        return time.monotonic() - self._start

    def __enter__(self) -> OutputCapture:
        global _current
        _install_streams()
        self._outer, _current = _current, self
        return self

    def __exit__(self, *exc: object) -> None:
        global _current
        descriptors.drain()  # what the cell's subprocesses and C code wrote belongs to it
        if _runtime_figures:
            flush_figures()
        _current = self._outer

    def _add(self, kind: str, payload: Any) -> None:
        self.events.append((time.monotonic() - self._start, kind, payload))
        if self.listener is not None:
            self.listener()

    def stream(self, name: str, text: str) -> None:
        """Text written to stdout or stderr."""
        if text:
            self._add("stream", (name, text))

    def warning(self, shown: dict[str, Any]) -> None:
        """A warning shown on stderr, with what Python's registry keys it by: a scattered
        loop's gather keeps the first of each, as one process would (warnings_once.py)."""
        descriptors.catch_up()
        self._add("warning", shown)
        echo = getattr(sys.stderr, "_echo", None)
        if self.echo and echo is not None:
            echo.write(shown["text"])

    def marker(self, kind: str) -> None:
        """An event that shows nothing (the warnings' filters changed: warnings_once.py)."""
        self._add(kind, None)

    def flush(self, name: str) -> None:
        """sys.stdout.flush() or sys.stderr.flush(): the stream's pending text is sent."""
        if self.events and self.events[-1][1:] != ("flush", name):
            self._add("flush", name)

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

    def raw_display(self, data: dict[str, Any], metadata: dict[str, Any] | None = None,
                    display_id: str | None = None, update: bool = False) -> None:
        """A display of an already formatted MIME bundle (IPython's display publisher, a
        %%html cell). With `update`, it replaces the earlier displays of `display_id`."""
        output: dict[str, Any] = {"output_type": "display_data", "data": jsonable(data),
                                  "metadata": jsonable(metadata or {})}
        if display_id is not None:
            output[DISPLAY_ID] = display_id
        self._add("update" if update else "output", output)

    def output(self, output: dict[str, Any]) -> None:
        """An output already in nbformat's shape (an execute_result or an error)."""
        self._add("output", output)

    def clear(self, wait: bool) -> None:
        """clear_output(): drop the outputs shown so far (with `wait`, at the next output)."""
        self._add("clear", wait)

    def error(self, ename: str, evalue: str, traceback: list[str]) -> None:
        """The cell raised."""
        self._add("output", {"output_type": "error", "ename": ename, "evalue": evalue,
                             "traceback": traceback})


def replay(events: list[Event]) -> list[dict[str, Any]]:
    """Outputs from timed events, sent as ipykernel sends them and kept as nbclient keeps them
    (see OutputCapture): clear_output empties the list (with wait=True, at the next output),
    and a display update replaces the data of the earlier outputs with the same display id."""
    outputs: list[dict[str, Any]] = []
    pending: dict[str, list[Any]] = {}  # stream -> [first write time, text]
    clear_next = False

    def append(output: dict[str, Any]) -> None:
        nonlocal clear_next
        if clear_next:
            outputs.clear()
            clear_next = False
        outputs.append(output)

    def send(name: str) -> None:
        text = pending.pop(name)[1]
        last = outputs[-1] if outputs and not clear_next else None
        if last is not None and last["output_type"] == "stream" and last["name"] == name:
            last["text"] += text
        else:
            append({"output_type": "stream", "name": name, "text": text})

    def send_due(now: float) -> None:
        for name in sorted(pending, key=lambda n: pending[n][0]):
            if now >= pending[name][0] + FLUSH_INTERVAL:
                send(name)

    def send_all() -> None:
        for name in ("stdout", "stderr"):
            if name in pending:
                send(name)

    for moment, kind, payload in sorted(events, key=lambda event: event[0]):
        send_due(moment)
        if kind in ("stream", "warning"):
            name, text = payload if kind == "stream" else ("stderr", payload["text"])
            if name in pending:
                pending[name][1] += text
            else:
                pending[name] = [moment, text]
        elif kind == "filters":
            continue
        elif kind == "flush":
            if payload in pending:
                send(payload)
        elif kind == "clear":
            send_all()  # ipykernel flushes the streams before it sends the clear
            if payload:
                clear_next = True
            else:
                outputs.clear()
        elif kind == "update":
            send_all()
            matched = False
            for output in outputs:
                if output.get(DISPLAY_ID) == payload.get(DISPLAY_ID):
                    output["data"], output["metadata"] = payload["data"], payload["metadata"]
                    matched = True
            if not matched:  # a display of an earlier cell: the assembler updates it
                outputs.append({**payload, "output_type": UPDATE})
        else:
            send_all()
            append(dict(payload))
    send_all()
    return outputs


#: An update of a display an earlier cell shows (`handle.update(...)`), kept among a cell's
#: outputs until the executed notebook is written (see settle_displays).
UPDATE = "nb2cwl_update"


def shown(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A cell's outputs as a notebook shows and stores them: display ids are transient."""
    return [{k: v for k, v in o.items() if k != DISPLAY_ID} for o in outputs
            if o.get("output_type") != UPDATE]


def settle_displays(cells: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """The outputs of the notebook's cells, in order, with each update a later cell made to a
    display of an earlier one applied there, as the kernel's frontend applies it."""
    updates: dict[str, dict[str, Any]] = {}
    settled = []
    for outputs in reversed(cells):  # an update applies to the displays before it
        for output in outputs:
            if output.get("output_type") == UPDATE:
                updates.setdefault(output[DISPLAY_ID], output)
        kept = []
        for output in outputs:
            update = updates.get(output.get(DISPLAY_ID, ""))
            if update is not None and output.get("output_type") != UPDATE:
                output = {**output, "data": update["data"], "metadata": update["metadata"]}
            kept.append(output)
        settled.append(shown(kept))
    return settled[::-1]


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
    return jsonable(data), jsonable(metadata)


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
    return jsonable(data)


def jsonable(data: dict[str, Any]) -> dict[str, Any]:
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
