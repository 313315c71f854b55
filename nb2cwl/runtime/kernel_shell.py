"""Run a step's cells through IPython's own InteractiveShell, as the Jupyter kernel does.

The kernel (ipykernel) is IPython's InteractiveShell with three things replaced: results,
displays and errors go to the frontend as messages instead of the terminal. A step does the
same, into the cell's OutputCapture. Everything else is IPython's own code: the input
transformer, magics, `$var` and `{expr}` expansion, `!` commands, the display formatter
(pandas and numpy reprs, `_repr_html_`), `_`/`__`/`Out`, and matplotlib's inline backend.

Libraries that behave differently in a kernel detect one the way ipykernel presents itself:
pandas looks for a shell with a `kernel` attribute and "zmq" in its class name (wide frames
wrap at 80 columns, 20 columns at most), rich and Keras for a shell class named
ZMQInteractiveShell, tqdm and others for an IPKernelApp section in the shell's config. The
step's shell presents itself the same way, has the kernel's own magics (ipykernel's
KernelMagics: %autosave, %clear, %less, ...; the storemagic extension ipykernel loads: %store),
sends what the kernel sends to the pager (`obj?`) nowhere, as the pager is no cell output, sets
the environment variables the kernel sets, and keeps `get_ipython` and `display` in the
builtins for the whole step (values loaded before the first cell may import pandas).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sys
import tempfile
import time
import types
import warnings
from typing import Any

from IPython.core import interactiveshell
from IPython.core.displayhook import DisplayHook
from IPython.core.displaypub import DisplayPublisher
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from . import capture
from .future import compiler_flags

#: What ipykernel's ZMQInteractiveShell.init_environment sets for the user's code.
KERNEL_ENVIRONMENT = {"TERM": "xterm-color", "CLICOLOR": "1", "FORCE_COLOR": "1",
                      "CLICOLOR_FORCE": "1", "PAGER": "cat", "GIT_PAGER": "cat"}
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


class StepDisplayHook(DisplayHook):
    """The cell's result becomes an execute_result output, as ipykernel sends it."""

    muted = False  # code run for the workflow itself (a loop's prefix) shows no result

    def __call__(self, result: Any = None) -> None:
        if not self.muted:
            super().__call__(result)

    def start_displayhook(self) -> None:
        """Nothing is printed before the result."""

    def write_output_prompt(self) -> None:
        """No `Out[n]:` prompt: the frontend draws it."""

    def write_format_data(self, format_dict: dict[str, Any],
                          md_dict: dict[str, Any] | None = None) -> None:
        """Record the formatted result in the running cell's outputs."""
        target = capture.current()
        if target is None:
            super().write_format_data(format_dict, md_dict)
            return
        _flush_streams()
        target.output({"output_type": "execute_result",
                       "data": capture.jsonable(format_dict),
                       "metadata": capture.jsonable(md_dict or {}),
                       "execution_count": self.prompt_count})

    def finish_displayhook(self) -> None:
        """The result is recorded; nothing to flush."""


class StepDisplayPublisher(DisplayPublisher):
    """display(), IPython.display objects and inline figures become display_data outputs."""

    def publish(self, data: dict[str, Any], metadata: dict[str, Any] | None = None,
                source: Any = None, *, transient: dict[str, Any] | None = None,
                update: bool = False, **kwargs: Any) -> None:
        """Record a display in the running cell's outputs (an update replaces earlier ones)."""
        target = capture.current()
        if target is None:
            super().publish(data, metadata, transient=transient, update=update)
            return
        _flush_streams()
        display_id = (transient or {}).get("display_id")
        target.raw_display(data, metadata, display_id=display_id, update=update)

    def clear_output(self, wait: bool = False) -> None:
        """IPython.display.clear_output(): as nbclient applies it to the cell's outputs."""
        target = capture.current()
        if target is None:
            super().clear_output(wait)
            return
        _flush_streams()
        target.clear(wait)


class ZMQStepShell(InteractiveShell):
    """The shell a step runs its cells in, presented as ipykernel's ZMQInteractiveShell.

    "ZMQ" is in the name on purpose: pandas tells a Jupyter frontend from a terminal by that
    name, and formats frames for the frontend only then.
    """

    displayhook_class = StepDisplayHook
    display_pub_class = StepDisplayPublisher
    kernel = None  # pandas: `hasattr(get_ipython(), "kernel")` means a Jupyter kernel
    skipped_magics: frozenset[str] = frozenset()  # %pip, %tensorboard: not run in a step

    def run_line_magic(self, magic_name: str, line: str, _stack_depth: int = 1) -> Any:
        """As IPython runs it, except the magics a workflow step does not run."""
        if magic_name in self.skipped_magics:
            return None
        return super().run_line_magic(magic_name, line, _stack_depth + 1)

    def init_environment(self) -> None:
        """The variables ipykernel sets: `!ls` and other programs print as in the kernel."""
        os.environ.update(KERNEL_ENVIRONMENT)

    def init_virtualenv(self) -> None:
        """As in ipykernel: the step's own interpreter is the environment."""

    def enable_gui(self, gui: Any = None) -> None:
        """A step has no event loop to integrate: `%matplotlib` backends draw inline."""

    script = False  # the cells are a script's: SystemExit(0) ends it quietly, as `python`

    def showtraceback(self, exc_tuple: Any = None, *args: Any, **kwargs: Any) -> None:
        """As IPython shows it, except a script's normal end (SystemExit 0 or None), which
        `python script.py` does not show."""
        value = (exc_tuple or sys.exc_info())[1]
        if self.script and isinstance(value, SystemExit) and value.code in (0, None):
            self._ended = True  # IPython's "To exit: use 'exit'" warning follows: dropped
            return
        super().showtraceback(exc_tuple, *args, **kwargs)

    def init_magics(self) -> None:
        """IPython's magics and the kernel's own (ipykernel's KernelMagics), as in a kernel."""
        super().init_magics()
        with contextlib.suppress(ImportError):
            from ipykernel.zmqshell import KernelMagics

            self.register_magics(KernelMagics)
            self.magics_manager.register_alias("ed", "edit")

    def init_hooks(self) -> None:
        """What the kernel sends to the frontend's pager (`len?`, %pinfo, %less) is no cell
        output: in a step it goes nowhere."""
        super().init_hooks()
        from IPython.core import page

        self.set_hook("show_in_pager", page.as_hook(lambda *args, **kwargs: None), 99)

    def _showtraceback(self, etype: type, evalue: BaseException, stb: list[str]) -> None:
        target = capture.current()
        if target is None:
            super()._showtraceback(etype, evalue, stb)
            return
        _flush_streams()
        target.output({"output_type": "error", "ename": str(etype.__name__),
                       "evalue": str(evalue), "traceback": list(stb)})


# rich and Keras format for a notebook when the shell's class has the kernel's name
ZMQStepShell.__name__ = ZMQStepShell.__qualname__ = "ZMQInteractiveShell"


def _flush_streams() -> None:
    sys.stdout.flush()
    sys.stderr.flush()


def _exit_warning(message: Any, *args: Any, **kwargs: Any) -> None:
    """IPython's `warn`, without its "To exit" hint after a script's normal end."""
    shell = ZMQStepShell.instance() if ZMQStepShell.initialized() else None
    if shell is not None and getattr(shell, "_ended", False):
        shell._ended = False
        return
    warnings.warn(message, *args, **kwargs)


class KernelExecutor:
    """Runs cells with the step's ZMQStepShell; see the module docstring."""

    kind = "ipython"

    @property
    def script(self) -> bool:
        """True when the cells are a script's (see ZMQStepShell.script)."""
        return self.shell.script

    @script.setter
    def script(self, value: bool) -> None:
        self.shell.script = value
        if value:
            interactiveshell.warn = _exit_warning

    def __init__(self, module: types.ModuleType, skipped_magics: list[str]) -> None:
        if not os.environ.get("MPLBACKEND") and _has_inline_backend():
            os.environ["MPLBACKEND"] = INLINE_BACKEND  # as ipykernel does
        capture.set_runtime_figures(os.environ.get("MPLBACKEND") != INLINE_BACKEND)
        config = Config()
        config.HistoryManager.enabled = False  # no history database
        config.IPKernelApp.nb2cwl = "a workflow step run as a kernel would run it"
        profile = tempfile.mkdtemp(prefix="nb2cwl-ipython-")
        atexit.register(shutil.rmtree, profile, True)
        extra: dict[str, Any] = {}
        try:  # ipykernel's compiler: a cell's code gets the file name it has in the kernel
            from ipykernel.compiler import XCachingCompiler

            extra["compiler_class"] = XCachingCompiler
        except ImportError:
            pass
        self.shell = ZMQStepShell.instance(config=config, user_module=module,
                                           ipython_dir=profile, **extra)
        self._filename = ""
        self.shell.skipped_magics = frozenset(skipped_magics)
        self.shell.builtin_trap.__enter__()  # get_ipython() and display() from now on
        with contextlib.suppress(Exception):  # as IPKernelApp loads it by default
            self.shell.extension_manager.load_extension("storemagic")
        self.namespace: dict[str, Any] = self.shell.user_ns

    def future(self, features: list[str]) -> None:
        """Compile the cells with these `from __future__` features on, as the kernel's compiler
        keeps those of earlier cells."""
        self.shell.compile.flags |= compiler_flags(features)

    def values_loaded(self) -> None:
        """`_`, `__`, `___` loaded from other steps are the results' history, not values the
        user assigned: the display hook keeps them up to date from here, as the kernel did."""
        hook = self.shell.displayhook
        for name in ("_", "__", "___"):
            if name in self.namespace:
                setattr(hook, name, self.namespace[name])
        # a figure made in another step shows as in the kernel, which had the inline backend
        # (and so its figure formats) since it made the figure
        if os.environ.get("MPLBACKEND") == INLINE_BACKEND and \
                "matplotlib_inline.backend_inline" not in sys.modules and any(
                type(value).__module__.startswith("matplotlib.")
                for value in list(self.namespace.values())):
            with contextlib.suppress(ImportError):
                import matplotlib_inline.backend_inline  # noqa: F401

    def run_cell(self, cell: dict[str, Any],
                 execution_count: int) -> tuple[bool, BaseException | None]:
        """Run one cell as the kernel runs an execute request, from its source where nb2cwl
        did not rewrite it; (ok, exception)."""
        raw = cell.get("source", cell["code"])
        self.shell.execution_count = execution_count
        self._filename = self.shell.compile.get_code_name(
            raw, self.shell.transform_cell(raw), execution_count)
        result = self.shell.run_cell(raw, store_history=True)
        error = result.error_before_exec or result.error_in_exec
        return error is None, error

    def run_code(self, code: str, show_result: bool, execution_count: int,
                 last: bool, source: str | None = None) -> tuple[bool, BaseException | None]:
        """Run a piece of a cell (a scattered loop's prefix or gather), at its lines in the
        cell, under the file name the kernel gave the whole cell (`source`, its raw source).

        The kernel would run the cell once: the result shows only for the piece that ends
        the cell (`show_result`), and the cell's figures only at its end (`last`).
        """
        self.shell.execution_count = execution_count
        compiler = self.shell.compile
        whole = self.cell_file(source, execution_count) if source is not None else None
        self._filename = whole or compiler.get_code_name(
            code, self.shell.transform_cell(code), execution_count)
        if whole is not None:  # the piece compiles under the cell's name (cached whole);
            def cache(*args: Any, **kwargs: Any) -> str:  # once: code the piece runs in
                del compiler.cache  # turn (get_ipython().run_cell) is named as it would be
                return whole

            compiler.cache = cache
        self.shell.displayhook.muted = not show_result
        events = self.shell.events
        callbacks = list(events.callbacks["post_execute"])
        if not last:
            events.callbacks["post_execute"] = []
        try:
            result = self.shell.run_cell(code, store_history=show_result)
        finally:
            if whole is not None and "cache" in vars(compiler):
                del compiler.cache
            self.shell.displayhook.muted = False
            events.callbacks["post_execute"] = callbacks
        error = result.error_before_exec or result.error_in_exec
        return error is None, error

    def filename_of(self, execution_count: int) -> str:
        """The file name the shell gave the code it ran last (for tracebacks)."""
        return self._filename

    def cell_file(self, source: str, execution_count: int) -> str | None:
        """The file name the kernel gave the code of a cell with this source, its code
        registered there for tracebacks and warnings; None where the name depends on more
        than the source (IPython's own compiler, without ipykernel's)."""
        compiler = self.shell.compile
        if type(compiler).__name__ != "XCachingCompiler":
            return None
        try:
            return compiler.cache(self.shell.transform_cell(source), execution_count, source)
        except Exception:  # a source IPython cannot transform: the old name
            return None


def _has_inline_backend() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("matplotlib_inline") is not None
    except (ImportError, ValueError):
        return False


class _KernelPresence:
    """What a library importing itself sees of the step's shell (ZMQStepShell): a `kernel`
    attribute (pandas: a Jupyter frontend, so 20 columns at most), ipykernel's class name
    (rich, Keras) and an IPKernelApp section in its config (tqdm)."""

    kernel = None

    def __init__(self) -> None:
        self.config = Config({"IPKernelApp": {}})


_KernelPresence.__name__ = _KernelPresence.__qualname__ = "ZMQInteractiveShell"


@contextlib.contextmanager
def presented_as_kernel():
    """While the step server imports the notebook's libraries: `get_ipython()` answers as in
    a step, so that what they decide when imported (pandas' display.max_columns) is what
    they decide there."""
    import builtins

    missing = object()
    before = builtins.__dict__.get("get_ipython", missing)
    presence = _KernelPresence()
    builtins.get_ipython = lambda: presence  # type: ignore[attr-defined]
    try:
        yield
    finally:
        if before is missing:
            del builtins.get_ipython
        else:
            builtins.get_ipython = before  # type: ignore[attr-defined]


def warm_up() -> None:
    """Import what making the shell imports: the step server (forkserver.py) does it once for
    the steps it forks."""
    import importlib

    # ipykernel's compiler imports jupyter_client and zmq (about 70 ms); making a shell
    # imports the rest, and the kernel's magics (zmqshell, storemagic) about 10 ms more
    for module in ("ipykernel.compiler", "IPython.core.application", "IPython.core.completer",
                   "IPython.core.completerlib", "IPython.core.crashhandler",
                   "IPython.core.magics", "IPython.core.oinspect", "IPython.utils.generics",
                   "IPython.utils.wildcard", "runpy", "unicodedata", "ipykernel.zmqshell",
                   "IPython.extensions.storemagic", "IPython.core.magics.code",
                   "IPython.core.logger", "bdb", "pkgutil"):
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    with contextlib.suppress(ImportError):  # the tokenizer's patterns, compiled once
        from IPython.core.inputtransformer2 import TransformerManager

        TransformerManager().transform_cell("x = 1\n")
    _has_inline_backend()


def create(module: types.ModuleType, skipped_magics: list[str]) -> KernelExecutor:
    """The IPython executor for this step (call once per process)."""
    started = time.monotonic()
    executor = KernelExecutor(module, skipped_magics)
    executor.startup_seconds = time.monotonic() - started  # type: ignore[attr-defined]
    return executor
