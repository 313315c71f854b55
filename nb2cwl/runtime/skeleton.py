"""Scattered loops: cut the collection into chunks, run items, gather them back in order."""

from __future__ import annotations

import itertools
import operator
import os
from collections.abc import Callable
from typing import Any

from . import values
from .capture import OutputCapture
from .failure import user_traceback

GATHERED = "__nb2cwl_gathered__"
RECORD = "__nb2cwl_record__"
ITEM = "__nb2cwl_item__"

_IN_PLACE = {
    "Add": operator.iadd, "Sub": operator.isub, "Mult": operator.imul,
    "Div": operator.itruediv, "FloorDiv": operator.ifloordiv, "Mod": operator.imod,
    "Pow": operator.ipow, "BitOr": operator.ior, "BitAnd": operator.iand,
    "BitXor": operator.ixor, "LShift": operator.ilshift, "RShift": operator.irshift,
    "MatMult": operator.imatmul,
}

RunCode = Callable[[str, bool], list[dict[str, Any]]]


def split(plan: dict[str, Any], namespace: dict[str, Any], out: str, run_code: RunCode,
          replayable: set[str]) -> list[dict[str, Any]]:
    """Run the code before the loop, then write the collection(s) as numbered chunks."""
    outputs = run_code(plan["prefix_code"], False) if plan["prefix_code"].strip() else []
    collections = [list(eval(source, namespace)) for source in plan["iterables"]]
    if plan["method"] == "dotproduct":
        shortest = min(len(c) for c in collections)  # zip stops at the shorter one
        collections = [c[:shortest] for c in collections]
    wanted = plan.get("chunks") or os.cpu_count() or 1
    first = _bounds(len(collections[0]), wanted)
    for number, collection in enumerate(collections):
        if number == 1 and plan["method"] == "nested_crossproduct":
            bounds = [(0, len(collection))]  # the inner collection travels whole
        else:
            bounds = first
        folder = os.path.join(out, f"chunks_{number}")
        os.makedirs(folder, exist_ok=True)
        for index, (start, stop) in enumerate(bounds):
            chunk = list(enumerate(collection))[start:stop]
            values.dump_object(chunk, os.path.join(folder, f"chunk-{index:06d}.pkl"),
                               replayable, f"the items of {plan['iterables'][number]}")
    return outputs


def _bounds(count: int, wanted: int) -> list[tuple[int, int]]:
    chunks = max(1, min(count, wanted))
    size, extra = divmod(count, chunks)
    bounds, start = [], 0
    for index in range(chunks):
        stop = start + size + (1 if index < extra else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


def run_items(plan: dict[str, Any], namespace: dict[str, Any], chunk_files: list[str],
              out: str, replayable: set[str], where: str) -> None:
    """Run the per-item code for every item of this job's chunk(s), in order."""
    chunks = [values.load_object(path, namespace) for path in chunk_files]
    if plan["method"] == "dotproduct":
        items = [((a[0],), (a[1], b[1])) for a, b in zip(chunks[0], chunks[1], strict=True)]
    elif plan["method"] == "nested_crossproduct":
        items = [((a[0], b[0]), (a[1], b[1]))
                 for a, b in itertools.product(chunks[0], chunks[1])]
    else:
        items = [((i,), (item,)) for i, item in chunks[0]]
    body = compile(plan["body"], "<loop body>", "exec") if plan["body"] else None
    element = compile(plan["element"], "<element>", "eval") if plan["element"] else None
    conditions = [compile(c, "<condition>", "eval") for c in plan["conditions"]]
    bindings = [compile(f"{target} = {ITEM}", "<target>", "exec") for target in plan["targets"]]
    records = []
    for key, item in items:
        with OutputCapture() as capture:
            try:
                result = _run_item(namespace, bindings, item, body, element, conditions)
            except Exception as exc:  # the first failing item stops the loop, as in Jupyter
                lines = user_traceback(exc)
                capture.error(type(exc).__name__, str(exc), lines)
                result = ("error", f"{where}:\n" + "\n".join(lines))
        records.append((key, capture.outputs, result))
        if result[0] == "error":
            break
    values.dump_object(records, os.path.join(out, "results.pkl"), replayable,
                       "the results of the loop")


def _run_item(namespace: dict[str, Any], bindings: list, item: tuple, body: Any, element: Any,
              conditions: list) -> tuple:
    for binding, value in zip(bindings, item, strict=True):
        namespace[ITEM] = value
        exec(binding, namespace)
    if body is not None:
        ops: list[tuple[str, str, tuple]] = []
        namespace[RECORD] = lambda name, op, args: ops.append((name, op, args))
        exec(body, namespace)
        return ("ops", ops)
    if all(eval(c, namespace) for c in conditions):
        return ("value", eval(element, namespace))
    return ("skip",)


def gather(plan: dict[str, Any], namespace: dict[str, Any], result_files: list[str],
           prefix_outputs: list[dict[str, Any]], run_code: RunCode) -> list[dict[str, Any]]:
    """Put item results back in order, apply accumulations, run the rest of the cell."""
    records = []
    for path in result_files:
        records.extend(values.load_object(path, namespace))
    records.sort(key=lambda record: record[0])
    outputs = list(prefix_outputs)
    gathered: list[Any] = []
    for _, item_outputs, result in records:
        outputs.extend(item_outputs)
        if result[0] == "error":
            raise LoopFailed(result[1], merge_streams(outputs))
        if result[0] == "value":
            gathered.append(result[1])
        elif result[0] == "ops":
            for name, op, args in result[1]:
                _apply(namespace, name, op, args)
    if plan["body"] is None:
        namespace[GATHERED] = _as_result(plan["result"], gathered)
    try:
        outputs.extend(run_code(plan["gather_code"], True))
    finally:
        namespace.pop(GATHERED, None)
    return merge_streams(outputs)


class LoopFailed(Exception):
    """An iteration raised: the loop's outputs up to that item, then the error."""

    def __init__(self, message: str, outputs: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.outputs = outputs


def _as_result(kind: str, gathered: list[Any]) -> Any:
    if kind == "set":
        result: Any = set()
        for value in gathered:
            result.add(value)
        return result
    if kind == "dict":
        return dict(gathered)
    return gathered


def _apply(namespace: dict[str, Any], name: str, op: str, args: tuple) -> None:
    target = namespace[name]
    kind, _, detail = op.partition(":")
    if kind == "call":
        getattr(target, detail)(*args)
    elif kind == "setitem":
        target[args[0]] = args[1]
    elif kind == "iop":
        namespace[name] = _IN_PLACE[detail](target, args[0])
    elif kind == "isetitem":
        target[args[0]] = _IN_PLACE[detail](target[args[0]], args[1])


def merge_streams(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Join consecutive stream outputs of the same stream, as Jupyter shows them."""
    merged: list[dict[str, Any]] = []
    for output in outputs:
        last = merged[-1] if merged else None
        if (last is not None and output["output_type"] == "stream"
                and last["output_type"] == "stream" and last["name"] == output["name"]):
            last["text"] += output["text"]
        else:
            merged.append(dict(output))
    return merged
