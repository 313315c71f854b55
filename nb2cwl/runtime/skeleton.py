"""Scattered loops: cut the collection into chunks, run items, gather them back in order."""

from __future__ import annotations

import json
import operator
import os
from collections.abc import Callable, Iterator
from typing import Any

from . import live, values
from .arguments import Arguments
from .capture import Event, OutputCapture, replay, shifted
from .failure import CellFailed, user_traceback
from .warnings_once import shown_once

GATHERED = "__nb2cwl_gathered__"
RECORD = "__nb2cwl_record__"
READ_BACK = "__nb2cwl_read_back__"
ITEM = "__nb2cwl_item__"

_IN_PLACE = {
    "Add": operator.iadd, "Sub": operator.isub, "Mult": operator.imul,
    "Div": operator.itruediv, "FloorDiv": operator.ifloordiv, "Mod": operator.imod,
    "Pow": operator.ipow, "BitOr": operator.ior, "BitAnd": operator.iand,
    "BitXor": operator.ixor, "LShift": operator.ilshift, "RShift": operator.irshift,
    "MatMult": operator.imatmul,
}

RunCode = Callable[[str, bool], tuple[list[Event], float]]


def run_part(role: str, cell: dict[str, Any], spec: dict[str, Any], args: Arguments,
             namespace: dict[str, Any], out: str, report: dict[str, Any], replayable: set[str],
             run_code: RunCode, filename: str | None) -> None:
    """Run the split, a map or the gather of the scattered loop in `cell` (`filename`: the one
    the kernel gave the cell, for the loop's body at its lines)."""
    plan = spec["plan"]
    if role == "split":
        live.cell_event(cell, "running")
        report["prefix_events"], report["prefix_duration"] = split(
            plan, namespace, out, run_code, replayable)
        report["shards"] = len(os.listdir(os.path.join(out, "chunks_0")))
    elif role == "map":
        chunk_files = [args.one(f"chunk-{n}") for n in range(len(plan["iterables"]))]
        run_items(plan, namespace, chunk_files, out, replayable, filename)
    elif role == "gather":
        with open(args.one("prefix-report"), encoding="utf-8") as handle:
            split_report = json.load(handle)
        prefix = (split_report.get("prefix_events", []), split_report.get("prefix_duration", 0))
        where = (f"nb2cwl: step {spec['step']} failed at {spec['notebook']}, cell "
                 f"{cell['index']} (In [{cell['execution_count']}], id {cell['id']}), line "
                 f"{plan['line']}, in an iteration of the loop")
        items: list[float] = []
        try:
            outputs, seconds = gather(plan, namespace, args.get("results", []), prefix,
                                      run_code, where, items)
        except LoopFailed as failed:
            raise CellFailed(cell, None, str(failed), failed.outputs) from None
        report["cells"].append({"index": cell["index"], "outputs": outputs,
                                "execution_count": cell["execution_count"],
                                "seconds": seconds, "item_seconds": items})
        live.cell_outputs(cell, outputs)
        live.cell_event(cell, "done", execution_count=cell["execution_count"])


def split(plan: dict[str, Any], namespace: dict[str, Any], out: str, run_code: RunCode,
          replayable: set[str]) -> list[dict[str, Any]]:
    """Run the code before the loop, then write the collection(s) as numbered chunks.

    Returns the timed events of that code and how long it took, for the gather's timeline.
    """
    timeline: list[Event] = []
    offset = 0.0
    if plan["prefix_code"].strip():
        timeline, offset = run_code(plan["prefix_code"], False)
    with OutputCapture() as capture:  # building the collection may print too
        collections = [list(eval(source, namespace)) for source in plan["iterables"]]
    timeline = timeline + shifted(capture.events, offset)
    offset += capture.duration
    if plan["method"] == "dotproduct":
        shortest = min(len(c) for c in collections)  # zip stops at the shorter one
        collections = [c[:shortest] for c in collections]
    wanted = plan.get("chunks") or os.cpu_count() or 1
    costs = plan.get("item_seconds") or []
    if plan["method"] != "nested_crossproduct" and len(costs) == len(collections[0]):
        cut = [balanced_shares(costs, wanted)] * len(collections)  # as the last run measured
    else:
        cut = [_shares(len(collections[0]), wanted)] * len(collections)
    if plan["method"] == "nested_crossproduct":
        # a grid: cut the inner collection where it has items enough, so that every job
        # runs every outer item (costs often grow with it: n_estimators, epochs), else cut
        # the outer one; the jobs are every pair of an outer and an inner share
        if len(collections[1]) >= wanted:
            cut = [[slice(None)], _shares(len(collections[1]), wanted)]
        else:
            cut = [cut[0], [slice(None)]]
    for number, collection in enumerate(collections):
        shares = cut[number]
        folder = os.path.join(out, f"chunks_{number}")
        os.makedirs(folder, exist_ok=True)
        numbered = list(enumerate(collection))
        for index, share in enumerate(shares):
            chosen = numbered[share] if isinstance(share, slice) else [numbered[i] for i in share]
            values.dump_object(chosen, os.path.join(folder, f"chunk-{index:06d}.pkl"),
                               replayable, f"the items of {plan['iterables'][number]}")
    return timeline, offset


def balanced_shares(costs: list[float], wanted: int) -> list[list[int]]:
    """Which items each chunk runs, given each item's measured seconds, so that the chunks
    end at about the same time: the costliest item first, each to the chunk with the least
    work so far, then the fewest items (longest processing time first). Each chunk runs its
    items in their order."""
    chunks = max(1, min(len(costs), wanted))
    loads, shares = [0.0] * chunks, [[] for _ in range(chunks)]
    for item in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        lightest = min(range(chunks), key=lambda c: (loads[c], len(shares[c]), c))
        loads[lightest] += costs[item]
        shares[lightest].append(item)
    return [sorted(share) for share in shares if share]


def _shares(count: int, wanted: int) -> list[slice]:
    """Which items each chunk runs: every `chunks`-th one, from its own start. Items next to
    each other often cost alike (a grid's largest models come last, a file list is sorted
    by size), so dealing them out like cards balances the chunks where cutting the list
    into runs would give one chunk all the heavy items. The gather puts them back in order
    by their numbers."""
    chunks = max(1, min(count, wanted))
    return [slice(index, None, chunks) for index in range(chunks)]


def run_items(plan: dict[str, Any], namespace: dict[str, Any], chunk_files: list[str],
              out: str, replayable: set[str], filename: str | None = None) -> None:
    """Run the per-item code for every item of this job's chunk(s), in order.

    Each item's printed output is kept with its position, so the gather can put everything
    back in iteration order; the first item that raises stops the job, as it stops the loop.
    """
    chunks = [values.load_object(path, namespace) for path in chunk_files]
    code = _Compiled(plan, namespace, filename)
    for name in plan.get("keep_locals", []):
        namespace.pop(name, None)  # present afterwards only if an iteration bound it
    records: list[tuple] = []
    try:
        if plan["method"] == "nested_crossproduct":
            # every job with the same outer items binds them; the first inner share's job
            # keeps what binding them showed (a comprehension's outer filter)
            first_inner = os.path.basename(chunk_files[1]) == "chunk-000000.pkl"
            for outer_index, outer in chunks[0]:
                bound: list[tuple] = []
                try:
                    kept = _record(bound, (outer_index, -1),
                                   lambda outer=outer: code.bind_test(namespace, 0, outer))
                finally:
                    if first_inner or any(record[3][0] == "error" for record in bound):
                        records += bound
                if not kept:
                    continue
                for inner_index, inner in chunks[1]:
                    _record(records, (outer_index, inner_index),
                            lambda inner=inner: code.item(namespace, 1, inner))
        elif plan["method"] == "dotproduct":
            for (index, first), (_, second) in zip(chunks[0], chunks[1], strict=True):
                _record(records, (index,), lambda pair=(first, second): code.pair(namespace,
                                                                                   pair))
        else:
            for index, item in chunks[0]:
                _record(records, (index,), lambda item=item: code.item(namespace, 0, item))
    except _Stopped:
        pass
    else:
        keep = {n: namespace[n] for n in plan.get("keep_locals", []) if n in namespace}
        if records and keep:
            records.append((records[-1][0] + (1,), [], 0.0, ("locals", keep)))
    path = os.path.join(out, "results.pkl")
    try:
        values.dump_object(records, path, replayable, "the results of the loop")
    except values.TransferError as exc:
        # the job must still leave its results file: StreamFlow 0.2.0rc3 can hang when a
        # scattered job ends without its outputs while others wait. The gather shows the error.
        first = records[0][0] if records else (chunks[0][0][0] if chunks[0] else 0,)
        message = f"{exc} The loop ran split over several processes: --no-scatter runs it in one."
        shown = {"output_type": "error", "ename": type(exc).__name__, "evalue": message,
                 "traceback": [message]}
        values.dump_object([(first, [(0.0, "output", shown)], 0.0, ("error", message))], path,
                           set(), "the results of the loop")


def _taken(op: str, args: tuple) -> tuple:
    """extend() and update() consume an iterator argument when called, not when gathered.

    Recording the iterator itself would run its code later, in the gather (its prints out of
    place), see what changed in between, or fail to travel (a generator cannot be pickled).
    """
    if op in ("call:extend", "call:update"):
        return tuple(list(a) if isinstance(a, Iterator) else a for a in args)
    return args


def _read_back(ops: list[tuple[str, str, tuple]], name: str, key: Any) -> Any:
    """`xs[-1]` after `xs.append(v)`, `d[k]` after `d[k] = v` in the same item: the value the
    item recorded (the analysis allows these reads only after that one accumulation)."""
    for recorded, op, args in reversed(ops):
        if recorded == name and op == "call:append":
            return args[0]
        if recorded == name and op == "setitem" and args[0] == key:
            return args[1]
    raise KeyError(key)


class _Stopped(Exception):
    """An item raised: no further item of this job runs."""


def _record(records: list[tuple], key: tuple, run: Callable[[], Any]) -> Any:
    with OutputCapture() as capture:
        try:
            result = run()
        except Exception as exc:  # the first failing item stops the loop, as in Jupyter
            lines = user_traceback(exc)
            capture.error(type(exc).__name__, str(exc), lines)
            records.append((key, capture.events, capture.duration,
                            ("error", "\n".join(lines))))
            raise _Stopped from None
    if isinstance(result, bool):  # an outer filter of a nested comprehension
        records.append((key, capture.events, capture.duration, ("skip",)))
        return result
    records.append((key, capture.events, capture.duration, result))
    return result


class _Compiled:
    """The per-item code of a plan, compiled once.

    A loop's variables are globals, as in the notebook. A comprehension's are local to it, so
    its per-item code (filters included) runs as a function: a global of the same name, which
    the functions it calls may read, keeps its value.
    """

    def __init__(self, plan: dict[str, Any], namespace: dict[str, Any],
                 filename: str | None = None) -> None:
        self.scoped: Callable[..., Any] | None = None
        self._inner: Callable[[Any], tuple] | None = None
        if plan["body"] is None:
            exec(compile(_comprehension_source(plan), "<comprehension>", "exec"), namespace)
            self.scoped = namespace.pop(_LEVEL)
        else:
            # at its cell's lines, the body runs under the file name the kernel gave the cell
            where = filename if filename and plan.get("body_at_lines") else "<loop body>"
            self.body = compile(plan["body"], where, "exec")
            self.bindings = [compile(f"{target} = {ITEM}", "<target>", "exec")
                             for target in plan["targets"]]

    def bind_test(self, namespace: dict[str, Any], number: int, value: Any) -> bool:
        """Take the outer item of a nested loop; False when a filter leaves it out."""
        if self.scoped is not None:
            self._inner = self.scoped(value)
            return self._inner is not None
        self._bind(namespace, number, value)
        return True

    def item(self, namespace: dict[str, Any], number: int, value: Any) -> tuple:
        if self.scoped is not None:
            return self._inner(value) if number else self.scoped(value)  # type: ignore[misc]
        self._bind(namespace, number, value)
        return self._finish(namespace)

    def pair(self, namespace: dict[str, Any], pair: tuple[Any, Any]) -> tuple:
        if self.scoped is not None:
            return self.scoped(*pair)
        for number, value in enumerate(pair):
            self._bind(namespace, number, value)
        return self._finish(namespace)

    def _bind(self, namespace: dict[str, Any], number: int, value: Any) -> None:
        namespace[ITEM] = value
        exec(self.bindings[number], namespace)

    def _finish(self, namespace: dict[str, Any]) -> tuple:
        ops: list[tuple[str, str, tuple]] = []
        namespace[RECORD] = lambda name, op, args: ops.append((name, op, _taken(op, args)))
        namespace[READ_BACK] = lambda name, key: _read_back(ops, name, key)
        exec(self.body, namespace)
        return ("ops", ops)


_LEVEL = "__nb2cwl_level__"


def _comprehension_source(plan: dict[str, Any]) -> str:
    """A function per item (per outer item, returning one per inner item, when nested)."""
    targets, element = plan["targets"], plan["element"]
    conditions = list(plan["conditions"]) or [[]]
    conditions += [[]] * (len(targets) - len(conditions))

    def test(group: list[str], indent: str, skipped: str) -> list[str]:
        if not group:
            return []
        joined = " and ".join(f"({c})" for c in group)
        return [f"{indent}if not ({joined}):", f"{indent}    return {skipped}"]

    if plan["method"] == "dotproduct":
        lines = [f"def {_LEVEL}(__nb2cwl_first__, __nb2cwl_second__):",
                 f"    {targets[0]} = __nb2cwl_first__", f"    {targets[1]} = __nb2cwl_second__",
                 *test(conditions[0], "    ", "('skip',)"), f"    return ('value', ({element}))"]
    elif len(targets) == 2:
        lines = [f"def {_LEVEL}({ITEM}):", f"    {targets[0]} = {ITEM}",
                 *test(conditions[0], "    ", "None"),
                 f"    def {_LEVEL}_inner({ITEM}):", f"        {targets[1]} = {ITEM}",
                 *test(conditions[1], "        ", "('skip',)"),
                 f"        return ('value', ({element}))", f"    return {_LEVEL}_inner"]
    else:
        lines = [f"def {_LEVEL}({ITEM}):", f"    {targets[0]} = {ITEM}",
                 *test(conditions[0], "    ", "('skip',)"), f"    return ('value', ({element}))"]
    return "\n".join(lines) + "\n"


def gather(plan: dict[str, Any], namespace: dict[str, Any], result_files: list[str],
           prefix: tuple[list[Event], float], run_code: RunCode,
           where: str = "", item_seconds: list[float] | None = None,
           ) -> tuple[list[dict[str, Any]], float]:
    """Put item results back in order, apply accumulations, run the rest of the cell; the
    cell's outputs, and the seconds the whole cell would take in one process (the code
    before the loop, every item, the rest of the cell), which later compilations use.

    The cell's outputs are laid out on one timeline, as if the items had run one after the
    other, so streams come out as Jupyter would show them. `item_seconds` gets each item's
    seconds, in order (a one-collection loop's), for the next run's split to balance.
    """
    records = []
    for path in result_files:
        records.extend(values.load_object(path, namespace))
    records.sort(key=lambda record: record[0])
    timeline, offset = list(prefix[0]), float(prefix[1])
    gathered = _Result(plan["result"])
    for key, events, duration, result in records:
        timeline += shifted(events, offset)
        offset += duration
        if item_seconds is not None and len(key) == 1 and plan["method"] != \
                "nested_crossproduct":
            item_seconds.append(round(duration, 4))
        if result[0] == "error":
            raise LoopFailed(f"{where}:\n{result[1]}", replay(shown_once(timeline)))
        if result[0] == "locals":
            namespace.update(result[1])
        elif result[0] == "value":
            try:  # as the comprehension would, item by item: a set fails on the first list
                gathered.add(result[1])
            except Exception as exc:  # no frame of the notebook's own: just the error
                lines = [f"{type(exc).__name__}: {exc}"]
                timeline.append((offset, "output", {
                    "output_type": "error", "ename": type(exc).__name__, "evalue": str(exc),
                    "traceback": lines}))
                raise LoopFailed(f"{where}:\n" + "\n".join(lines),
                                 replay(shown_once(timeline))) from None
        elif result[0] == "ops":
            for name, op, args in result[1]:
                _apply(namespace, name, op, args)
    if plan["body"] is None:
        namespace[GATHERED] = gathered.value
    try:
        events, rest = run_code(plan["gather_code"], True)
    except CellFailed as failure:
        failure.outputs = replay(shown_once(timeline + shifted(failure.events, offset)))
        raise
    finally:
        namespace.pop(GATHERED, None)
    return replay(shown_once(timeline + shifted(events, offset))), offset + rest


class LoopFailed(Exception):
    """An iteration raised: the loop's outputs up to that item, then the error."""

    def __init__(self, message: str, outputs: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.outputs = outputs


class _Result:
    """A comprehension's result, built item by item in the original order."""

    def __init__(self, kind: str) -> None:
        self.value: Any = set() if kind == "set" else {} if kind == "dict" else []
        self._kind = kind

    def add(self, item: Any) -> None:
        if self._kind == "set":
            self.value.add(item)
        elif self._kind == "dict":
            key, value = item
            self.value[key] = value
        else:
            self.value.append(item)


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
