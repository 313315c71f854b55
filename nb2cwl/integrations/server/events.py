"""The run events nb2cwl's server extension puts on Jupyter Server's event bus."""

from __future__ import annotations

from typing import Any

SCHEMA_ID = "https://events.nb2cwl.org/run/v1"

_TEXT = {"type": "string"}
_NUMBER = {"type": "number"}

#: One event per line `nb2cwl run --events` writes (see nb2cwl/run_events.py), with the run's
#: id and the notebook's path added.
SCHEMA: dict[str, Any] = {
    "$id": SCHEMA_ID,
    "version": "1",
    "title": "nb2cwl run progress",
    "description": "A workflow run of a notebook: the run's, a step's or a cell's status, or "
                   "a cell's new outputs.",
    "type": "object",
    "required": ["run", "path", "kind"],
    "properties": {
        "run": {"title": "run id", **_TEXT},
        "path": {"title": "notebook path, relative to the server's root", **_TEXT},
        "kind": {"title": "what the event is about", "enum": ["run", "step", "cell", "output"]},
        "status": {"title": "queued, running, done, cached, failed, skipped, cancelled",
                   **_TEXT},
        "step": {"title": "step name", **_TEXT},
        "steps": {"title": "the workflow's steps, in order", "type": "array"},
        "cells": {"title": "the step's cell ids", "type": "array"},
        "role": {"title": "the step's role: cell, split, map, gather, assemble", **_TEXT},
        "deployment": {"title": "where the step runs", **_TEXT},
        "where": {"title": "where the step runs: deployment (host)", **_TEXT},
        "host": {"title": "the host the step runs on", **_TEXT},
        "pid": {"title": "the step's process", "type": "integer"},
        "shard": {"title": "this job's shard of a scattered loop, from 1", "type": "integer"},
        "shards": {"title": "how many shards", "type": "integer"},
        "elapsed": {"title": "seconds the step took", **_NUMBER},
        "cache": {"title": "the step's rerun-cache key", **_TEXT},
        "cell": {"title": "cell id", **_TEXT},
        "index": {"title": "cell index, every cell counted from 0", "type": "integer"},
        "execution_count": {"title": "the cell's execution count", "type": ["integer", "null"]},
        "output": {"title": "one more nbformat output of the cell", "type": "object"},
        "outputs": {"title": "all the cell's outputs so far (with reset)", "type": "array"},
        "reset": {"title": "the cell's outputs are now `outputs`", "type": "boolean"},
        "message": {"title": "the error", **_TEXT},
        "results": {"title": "the run's results folder", **_TEXT},
        "executed_notebook": {"title": "the executed notebook", **_TEXT},
        "time": {"title": "when it happened (epoch seconds)", **_NUMBER},
    },
}
