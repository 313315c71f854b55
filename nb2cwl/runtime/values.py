"""Saving and loading the values that flow between steps, by type.

numpy arrays go to .npy, pandas objects to pandas' pickle format, Keras models to .keras, and
everything else through cloudpickle. Values that may share objects (aliases) are saved in one
pickle so that, loaded again, they still share them. Classes and functions a later step replays
from the notebook are pickled by reference, so instances keep their class identity.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import types
from collections.abc import Callable, Iterable
from typing import Any

from . import code_names

try:
    import cloudpickle

    _BasePickler: Any = cloudpickle.Pickler
except ImportError:  # plain pickle still handles module-level classes and most data
    cloudpickle = None
    _BasePickler = pickle.Pickler

INDEX = "index.json"
RNG_FILES = {"rng:random": "rng-random.pkl", "rng:numpy": "rng-numpy.pkl"}


class TransferError(Exception):
    """A value could not be saved or loaded; the message says which and what to do."""


class _Pickler(_BasePickler):  # type: ignore[misc, valid-type]
    def __init__(self, file: Any, replayable: set[str], label: str = "") -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.replayable = replayable
        self.label = label
        self.needs: set[str] = set()
        self.sets: dict[int, int] = {}
        self.kept: list[Any] = []
        self.code: dict[int, types.CodeType] = {}

    def persistent_id(self, obj: Any) -> Any:
        """Sets are saved with the way to rebuild them in their own order (_same_order); the
        C pickler offers no other hook for them. The same set met again is a reference."""
        if type(obj) not in (set, frozenset):
            return None
        number = self.sets.get(id(obj))
        if number is not None:
            return ("nb2cwl-set-again", number)
        self.sets[id(obj)] = number = len(self.sets)
        self.kept.append(obj)  # alive until the dump ends: its id is not reused
        return ("nb2cwl-set", number, type(obj) is frozenset, _same_order(obj, self.label))

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, types.CodeType) and cloudpickle is not None:  # keeps its file name
            reduced = code_names.reduce_code(obj, self.code)
            if reduced is not None:
                return reduced
        if isinstance(obj, (type, types.FunctionType)) and obj.__module__ == "__main__":
            top = getattr(obj, "__qualname__", "").split(".")[0]
            main = sys.modules.get("__main__")
            if top in self.replayable and _resolve(main, obj.__qualname__) is obj:
                self.needs.add(top)
                return NotImplemented  # pickle by reference: the loading step replays it
        parent = getattr(super(), "reducer_override", None)
        return parent(obj) if parent is not None else NotImplemented


class _SetLoader:
    """persistent_load for the sets a _Pickler saved."""

    def __init__(self) -> None:
        self.sets: dict[int, Any] = {}

    def __call__(self, pid: Any) -> Any:
        if pid[0] == "nb2cwl-set-again":
            return self.sets[pid[1]]
        if pid[0] != "nb2cwl-set":
            raise pickle.UnpicklingError(f"unknown persistent id {pid[0]!r}")
        _, number, frozen, argument = pid
        self.sets[number] = found = (frozenset if frozen else set)(argument)
        return found


def _same_order(found: set | frozenset, label: str) -> list | dict:
    """What to rebuild a set from so that it iterates in its own order, as the kernel's one
    object does: pickle's default (insert the items in that order) often gives another order,
    since the order follows the hash table's history. Inserting the items in their order,
    then moving an item ahead of the one that took its place, finds an order that rebuilds
    the same table for most sets (the steps hash strings alike); the rest are noted
    (UNORDERED)."""
    kind = type(found)
    order = list(found)
    if len(order) > _SET_REPAIR_UP_TO:
        return order
    for start in (order, order[::-1]):
        attempt = list(start)
        for _ in range(_SET_REPAIRS):
            rebuilt = list(kind(attempt))
            if rebuilt == order:
                return attempt
            first = next(k for k, (a, b) in enumerate(zip(rebuilt, order, strict=True)) if a != b)
            wanted, taken = order[first], rebuilt[first]
            attempt.remove(wanted)
            attempt.insert(attempt.index(taken), wanted)  # it claims its place first
    for candidate in (dict.fromkeys(order), dict.fromkeys(order[::-1])):  # presized tables
        if list(kind(candidate)) == order:
            return candidate
    UNORDERED.append(label)
    return order


#: Sets up to this size are rebuilt in their own order (each try builds a copy).
_SET_REPAIR_UP_TO = 200_000
_SET_REPAIRS = 64
#: The values holding a set no way of rebuilding gives its order back (see _same_order).
UNORDERED: list[str] = []


def _resolve(module: Any, qualname: str) -> Any:
    target = module
    for part in qualname.split("."):
        target = getattr(target, part, None)
        if target is None:
            return None
    return target


def save_values(
    namespace: dict[str, Any],
    names: Iterable[str],
    groups: Iterable[Iterable[str]],
    directory: str,
    replayable: set[str],
) -> None:
    """Save `names` from `namespace` (and rng:* state) into `directory` with an index."""
    os.makedirs(directory, exist_ok=True)
    index: dict[str, dict[str, Any]] = {}
    wanted = [n for n in names if not n.startswith("file:")]
    for state in [n for n in wanted if n.startswith("rng:")]:
        _save_rng(state, directory)
        index[state] = {"file": RNG_FILES[state], "format": "rng"}
    present = [n for n in wanted if not n.startswith("rng:") and n in namespace]
    for group in _groups(namespace, present, groups):
        if len(group) == 1:
            name = group[0]
            index[name] = _save_one(name, namespace[name], directory, replayable)
        else:
            file_name = "group-" + "-".join(group)[:80] + ".pkl"
            needs = _pickle({n: namespace[n] for n in group}, os.path.join(directory, file_name),
                            replayable, ", ".join(group))
            for name in group:
                index[name] = {"file": file_name, "format": "group", "needs": needs}
    with open(os.path.join(directory, INDEX), "w", encoding="utf-8") as handle:
        json.dump(index, handle, indent=1, sort_keys=True)


def keep_values(namespace: dict[str, Any], names: Iterable[str], directory: str,
                replayable: set[str]) -> None:
    """Also save `names` (what the step's cells defined that no later step reads, for
    pulling them into a kernel), each on its own and as far as it can be: a value that
    cannot be saved is left out, with a line in the step's log."""
    index_path = os.path.join(directory, INDEX)
    with open(index_path, encoding="utf-8") as handle:
        index: dict[str, dict[str, Any]] = json.load(handle)
    for name in names:
        value = namespace.get(name, _MISSING)
        if (name in index or value is _MISSING or isinstance(value, types.ModuleType)
                or name.startswith("__")):
            continue
        try:
            index[name] = _save_one(name, value, directory, replayable)
        except Exception as exc:  # a lock, a generator, a live connection: not kept
            sys.stderr.write(f"(nb2cwl keeps no value of {name} for pulling: {exc})\n")
    with open(index_path, "w", encoding="utf-8") as handle:
        json.dump(index, handle, indent=1, sort_keys=True)


_MISSING = object()


def _groups(namespace: dict[str, Any], present: list[str],
            declared: Iterable[Iterable[str]]) -> list[list[str]]:
    parent = {n: n for n in present}

    def find(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    def union(a: str, b: str) -> None:
        parent[find(a)] = find(b)

    for group in declared:
        members = [n for n in group if n in parent]
        for other in members[1:]:
            union(members[0], other)
    by_id: dict[int, str] = {}
    for name in present:
        value = namespace[name]
        if isinstance(value, (int, float, str, bytes, bool, type(None))):
            continue  # immutable: sharing cannot be observed
        if id(value) in by_id:
            union(name, by_id[id(value)])
        else:
            by_id[id(value)] = name
    result: dict[str, list[str]] = {}
    for name in present:
        result.setdefault(find(name), []).append(name)
    return [sorted(g) for g in result.values()]


def _save_one(name: str, value: Any, directory: str, replayable: set[str]) -> dict[str, Any]:
    numpy = sys.modules.get("numpy")
    if numpy is not None and type(value) is numpy.ndarray and value.dtype != object:
        file_name = f"{name}.npy"
        numpy.save(os.path.join(directory, file_name), value, allow_pickle=False)
        return {"file": file_name, "format": "npy"}
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(value, (pandas.DataFrame, pandas.Series)):
        file_name = f"{name}.pandas.pkl"
        try:
            value.to_pickle(os.path.join(directory, file_name))
            return {"file": file_name, "format": "pandas"}
        except Exception:  # object columns holding unpicklable things: try cloudpickle
            pass
    if _is_keras_model(value):
        file_name = f"{name}.keras"
        value.save(os.path.join(directory, file_name))
        return {"file": file_name, "format": "keras", "needs": _notebook_classes(value)}
    file_name = f"{name}.pkl"
    needs = _pickle(value, os.path.join(directory, file_name), replayable, name)
    return {"file": file_name, "format": "pickle", "needs": needs}


def _is_keras_model(value: Any) -> bool:
    """A Keras model, a notebook's own subclasses included."""
    return any(c.__name__ in ("Model", "Sequential", "Functional")
               and (c.__module__ or "").startswith(("keras", "tf_keras"))
               for c in type(value).__mro__)


def _notebook_classes(model: Any) -> list[str]:
    """Names of the notebook's classes a model is made of (replayed before it loads)."""
    found: list[str] = []
    parts = [model, *getattr(model, "_flatten_layers", lambda: [])()]
    for part in parts:
        for cls in type(part).__mro__:
            if cls.__module__ == "__main__" and cls.__name__ not in found:
                found.append(cls.__name__)
    return found


def _load_keras(path: str, namespace: dict[str, Any]) -> Any:
    """A saved Keras model, its notebook classes resolved from the step's namespace.

    A subclass whose constructor takes no config arguments cannot be rebuilt by Keras; it is
    constructed with no arguments, built from its build config, compiled from its compile
    config, and given the saved weights (and optimizer state).
    """
    import keras

    classes = {k: v for k, v in namespace.items() if isinstance(v, type)}
    with keras.saving.custom_object_scope(classes):
        try:
            return keras.models.load_model(path)
        except TypeError:
            import zipfile

            with zipfile.ZipFile(path) as archive:
                config = json.loads(archive.read("config.json"))
            cls = classes.get(config.get("registered_name") or config.get("class_name"))
            if cls is None:
                raise
            model = cls()
            if config.get("build_config"):
                model.build_from_config(config["build_config"])
            if config.get("compile_config"):
                model.compile_from_config(config["compile_config"])
                if getattr(model, "optimizer", None) is not None and model.built:
                    model.optimizer.build(model.trainable_variables)
            if model.built:  # an unbuilt model was saved without weights
                model.load_weights(path)
            return model


def _pickle(value: Any, path: str, replayable: set[str], label: str) -> list[str]:
    try:
        with open(path, "wb") as handle:
            pickler = _Pickler(handle, replayable, label)
            pickler.dump(value)
    except Exception as exc:
        os.unlink(path)
        kind = type(value).__name__ if not isinstance(value, dict) else "values"
        raise TransferError(
            f"cannot pass {label} ({kind}) to later steps: {type(exc).__name__}: {exc}. "
            "Values such as generators, open files, locks, sockets and database connections "
            "cannot be saved: create the value in the cell that uses it, or tag the cells "
            "nb2cwl:step=<name> so they run in one step."
        ) from exc
    return sorted(pickler.needs)


def dump_object(value: Any, path: str, replayable: set[str], label: str) -> list[str]:
    """Pickle one object (chunks of items, loop results) like a value between steps."""
    return _pickle(value, path, replayable, label)


def load_object(path: str, namespace: dict[str, Any]) -> Any:
    """Load an object written by dump_object, functions bound to the live namespace."""
    return _unpickle(path, namespace)


def _save_rng(state: str, directory: str) -> None:
    if state == "rng:random":
        import random

        value: Any = random.getstate()
    else:
        import numpy

        value = numpy.random.get_state()
    with open(os.path.join(directory, RNG_FILES[state]), "wb") as handle:
        pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)


def load_values(
    directory: str,
    names: Iterable[str],
    namespace: dict[str, Any],
    ensure_defined: Callable[[list[str]], None],
) -> None:
    """Bind `names` saved in `directory` into `namespace`; a missing value is left unbound."""
    with open(os.path.join(directory, INDEX), encoding="utf-8") as handle:
        index: dict[str, dict[str, Any]] = json.load(handle)
    groups: dict[str, dict[str, Any]] = {}
    for name in names:
        entry = index.get(name)
        if entry is None:
            continue  # the producing cell did not define it (e.g. only under an if)
        path = os.path.join(directory, entry["file"])
        kind = entry["format"]
        ensure_defined(list(entry.get("needs", [])))
        if kind == "rng":
            _load_rng(name, path)
        elif kind == "npy":
            import numpy

            namespace[name] = numpy.load(path, allow_pickle=False)
        elif kind == "pandas":
            import pandas

            namespace[name] = pandas.read_pickle(path)
        elif kind == "keras":
            namespace[name] = _load_keras(path, namespace)
        elif kind == "group":
            if entry["file"] not in groups:
                groups[entry["file"]] = _unpickle(path, namespace)
            namespace[name] = groups[entry["file"]][name]
        else:
            namespace[name] = _unpickle(path, namespace)


def _unpickle(path: str, namespace: dict[str, Any] | None = None) -> Any:
    with open(path, "rb") as handle:
        if namespace is None:
            unpickler = pickle.Unpickler(handle)
            unpickler.persistent_load = _SetLoader()  # type: ignore[method-assign]
            return unpickler.load()
        return _LiveUnpickler(handle, namespace).load()


class _LiveUnpickler(pickle.Unpickler):
    """Functions from the notebook's namespace get the step's live namespace as globals.

    cloudpickle rebuilds a function with a snapshot of the globals it used when pickled; in
    Jupyter a function sees the globals as they are when it is called (late binding). Snapshot
    values only fill names the step has not bound (a loaded or assigned value always wins).
    """

    def __init__(self, file: Any, namespace: dict[str, Any]) -> None:
        super().__init__(file)
        self.namespace = namespace
        self.persistent_load = _SetLoader()  # type: ignore[method-assign]

    def find_class(self, module: str, name: str) -> Any:
        found = super().find_class(module, name)
        if not module.startswith("cloudpickle"):
            return found
        live = self.namespace
        if name == "_make_function":
            def make_function(code: Any, globals_: dict, *rest: Any) -> Any:
                if globals_.get("__name__") == "__main__":
                    globals_ = live
                return found(code, globals_, *rest)

            return make_function
        if name == "_function_setstate":
            def setstate(obj: Any, state: Any) -> Any:
                if obj.__globals__ is live:
                    plain, slots = state
                    slots = dict(slots)
                    for key, value in slots.pop("__globals__").items():
                        live.setdefault(key, value)
                    slots["__globals__"] = {}
                    state = (plain, slots)
                return found(obj, state)

            return setstate
        return found


def _load_rng(state: str, path: str) -> None:
    value = _unpickle(path)
    if state == "rng:random":
        import random

        random.setstate(value)
    else:
        import numpy

        numpy.random.set_state(value)
