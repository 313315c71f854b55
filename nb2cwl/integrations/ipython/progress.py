"""`%nb2cwl run` and `%nb2cwl pull`: a run of the notebook file, its progress shown in the cell
while it goes, and values of the last run loaded into the kernel."""

from __future__ import annotations

import time
from typing import Any

from IPython.core.error import UsageError
from IPython.display import display, update_display

from nb2cwl.integrations.runs import Run, RunRequest, RunStore

REFRESH = 0.2  # seconds between updates of the progress display
_KERNEL_STORE: list[RunStore] = []


def kernel_store() -> RunStore:
    """The kernel's run store: it keeps a standby ready (nb2cwl.standby), so that the next
    `%nb2cwl run` starts without nb2cwl's and StreamFlow's start-up; the standby ends with the
    kernel."""
    if not _KERNEL_STORE:
        _KERNEL_STORE.append(RunStore())
        _KERNEL_STORE[0].prepare(with_parent=True)
    return _KERNEL_STORE[0]


def run_with_progress(notebook: str, deployment: str | None, changed: bool,
                      store: RunStore | None = None) -> None:
    """Run `notebook` as a workflow (its saved file), showing each step's status; raise a
    UsageError with the failing cell when a cell fails. Interrupting the kernel cancels it."""
    store = store or kernel_store()
    going = store.active(notebook)
    if going is not None:
        raise UsageError(f"run {going.id} of this notebook is still going")
    run = store.start(RunRequest(notebook=notebook, path=notebook, deployment=deployment,
                                 mode="changed" if changed else "all"), with_parent=True)
    display_id = f"nb2cwl-run-{run.id}"
    display({"text/plain": _progress(run)}, raw=True, display_id=display_id)
    shown = time.monotonic()
    try:
        for _ in store.follow(run):
            if time.monotonic() - shown >= REFRESH:
                update_display({"text/plain": _progress(run)}, raw=True, display_id=display_id)
                shown = time.monotonic()
    except KeyboardInterrupt:
        store.cancel(run)
        store.wait(run, 60)
        update_display({"text/plain": _progress(run)}, raw=True, display_id=display_id)
        raise
    update_display({"text/plain": _progress(run)}, raw=True, display_id=display_id)
    summary = run.to_json()
    if summary["status"] != "done":
        raise UsageError(f"run {run.id} {summary['status']}: {summary['error']}")
    reused = sum(1 for s in run.state.steps.values() if s.get("status") == "cached")
    print(f"run {run.id} done in {summary['duration']:.1f} s: {summary['steps_total']} steps"
          + (f" ({reused} reused)" if reused else "")
          + f"\nexecuted notebook: {run.executed_notebook()}")


def _progress(run: Run) -> str:
    """One line per step: its status, time and where it ran."""
    state = run.state
    lines = [f"nb2cwl run {run.id} ({run.meta.get('deployment') or 'local'}): "
             f"{state.steps_done}/{len(state.order) or '?'} steps"]
    for name in state.order:
        step = state.steps.get(name, {"status": "queued"})
        elapsed = f"{step['elapsed']:.1f} s" if isinstance(step.get("elapsed"), float) else ""
        shard = f" shard {step['shard']}/{step.get('shards', '?')}" if step.get("shard") else ""
        lines.append(f"  {name:<24} {step.get('status', ''):<8} {elapsed:>8}  "
                     f"{step.get('where', '')}{shard}")
    return "\n".join(lines)


def pull(shell: Any, notebook: str, names: list[str], store: RunStore | None = None) -> None:
    """Load `names` from the notebook's last finished run into the kernel."""
    from nb2cwl.integrations.run_values import PullError, pull_values

    store = store or RunStore()
    run = store.last_finished(notebook)
    if run is None:
        raise UsageError("this notebook has no finished run to load values from "
                         "(%nb2cwl run, or Run all in the nb2cwl sidebar)")
    try:
        where = pull_values(run, names, shell.user_ns)
    except PullError as exc:
        raise UsageError(str(exc)) from None
    for name in names:
        print(f"{name}: from step {where[name]} of run {run.id}")
