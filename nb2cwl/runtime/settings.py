"""Settings of earlier cells (pandas' options, matplotlib's style, warning filters), replayed.

A step is a fresh process: process-wide state set by cells of other steps is not there. The
compiler lists the statements that set it and that can run again on their own; a step runs
each before the first of its cells that follows it, in notebook order, as soon as a module it
configures is imported in the step (a step that never imports matplotlib cannot show its
style, and does not pay for importing it). What a replay prints is not shown: the cell that
made the setting showed it already.
"""

from __future__ import annotations

import builtins
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Callable
from typing import Any

from .capture import OutputCapture


class SettingsReplay:
    """Replays a step's settings (see the module docstring)."""

    def __init__(self, settings: list[dict[str, Any]], definitions: dict[str, dict[str, Any]],
                 namespace: dict[str, Any]) -> None:
        self.pending = sorted(settings, key=lambda s: _position(s["key"]))
        self.definitions = definitions
        self.namespace = namespace
        self.hook = _AfterImport()

    def due_before(self, position: tuple[int, int]) -> list[dict[str, Any]]:
        """Take the settings made before `position` (cell, statement number)."""
        due = [s for s in self.pending if _position(s["key"]) < position]
        self.pending = [s for s in self.pending if s not in due]
        return due

    def before_cell(self, cell: int) -> None:
        """Apply (or arm) every setting made before cell `cell`."""
        for setting in self.due_before((cell, -1)):
            self.apply(setting)

    def apply(self, setting: dict[str, Any]) -> None:
        """Run `setting` now if what it configures is imported, else once it is."""
        owners = [o for o in setting.get("owners", []) if o]
        if not owners or any(owner in sys.modules for owner in owners):
            self._run(setting)
            return
        self.hook.arm(owners, lambda: self._run(setting))

    def run_now(self, setting: dict[str, Any]) -> None:
        """Run `setting` at once (a training step makes its cells' settings that came before
        the notebook imported TensorFlow before importing it itself)."""
        self._run(setting)

    def _run(self, setting: dict[str, Any]) -> None:
        scratch: dict[str, Any] = {"__builtins__": builtins, "__name__": "__main__"}
        for name in ("get_ipython", "display"):
            if name in self.namespace:
                scratch[name] = self.namespace[name]
        done: set[str] = set()

        def replay(key: str) -> None:
            if key in done or key not in self.definitions:
                return
            done.add(key)
            definition = self.definitions[key]
            for required in definition.get("requires", []):
                replay(required)
            exec(compile(definition["code"], f"<cell {definition['cell']}>", "exec"), scratch)

        try:
            with OutputCapture(echo=False):  # shown already, by the cell that made it
                for key in setting.get("requires", []):
                    replay(key)
                exec(compile(setting["code"], f"<cell {setting['cell']}>", "exec"), scratch)
        except Exception as exc:  # the cells still run; the log says what differs
            shown = setting.get("shown") or f"cell {setting['cell']}"  # In [n], as Jupyter
            sys.stderr.write(f"nb2cwl: could not replay the setting of {shown} "
                             f"({setting['code'].splitlines()[0][:80]}): "
                             f"{type(exc).__name__}: {exc}\n")


def _position(key: str) -> tuple[int, int]:
    cell, number = key.split(":")
    return int(cell), int(number)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs callbacks right after a module finishes importing (before the importer goes on)."""

    def __init__(self) -> None:
        self.waiting: dict[str, list[Callable[[], None]]] = {}

    def arm(self, modules: list[str], callback: Callable[[], None]) -> None:
        """Call `callback` once, after the first of `modules` is imported."""
        fired = False

        def once() -> None:
            nonlocal fired
            if not fired:
                fired = True
                callback()

        for module in modules:
            self.waiting.setdefault(module, []).append(once)
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        """Find the module with the other finders, and run the callbacks after it loads."""
        if fullname not in self.waiting:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Loader(spec.loader, self.waiting.pop(fullname))
        return spec


class _Loader(importlib.abc.Loader):
    """A module's own loader, then the callbacks waiting for it."""

    def __init__(self, loader: Any, callbacks: list[Callable[[], None]]) -> None:
        self._loader = loader
        self._callbacks = callbacks

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        for callback in self._callbacks:
            callback()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)
