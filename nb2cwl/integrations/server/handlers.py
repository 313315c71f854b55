"""The REST endpoints of nb2cwl's server extension (under `<base_url>nb2cwl/api/`).

`path` is a notebook's path relative to the server's root, as the contents API has it;
`content` (optional) is the notebook as nbformat JSON, the editor's unsaved state, which runs
instead of the file (the file is never written). Errors come back as
`{"message": "nb.ipynb, cell 4 (id ab), line 2: ..."}` with status 400 (the notebook), 404
(no such run or file) or 409 (a run of the notebook is already going).
"""

from __future__ import annotations

import json
import os
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web
from tornado.ioloop import IOLoop

from nb2cwl.errors import Nb2CwlError
from nb2cwl.integrations.runs import GRANULARITIES, MODES, Run, RunRequest

RESOURCE = "nb2cwl"


class _Handler(APIHandler):
    """Shared plumbing: the extension, paths under the root, JSON bodies and errors."""

    auth_resource = RESOURCE

    @property
    def nb2cwl(self) -> Any:
        return self.settings["nb2cwl"]

    def notebook_path(self, path: str | None) -> str:
        """The absolute path of the notebook at `path` (relative to the server's root)."""
        if not path:
            raise web.HTTPError(400, "give the notebook's path")
        root = os.path.realpath(self.nb2cwl.serverapp.root_dir)
        full = os.path.realpath(os.path.join(root, path.lstrip("/")))
        if os.path.commonpath([root, full]) != root:
            raise web.HTTPError(400, f"{path}: outside the server's root")
        if not os.path.isfile(full):
            raise web.HTTPError(404, f"no notebook {path}")
        return full

    def body(self) -> dict[str, Any]:
        try:
            data = json.loads(self.request.body or b"{}")
        except ValueError:
            raise web.HTTPError(400, "the body is not JSON") from None
        if not isinstance(data, dict):
            raise web.HTTPError(400, "the body must be a JSON object")
        return data

    def send(self, data: Any, status: int = 200) -> None:
        self.set_status(status)
        self.finish(json.dumps(data, default=str))

    async def compiled(self, data: dict[str, Any]) -> Any:
        """Compile the body's notebook (in a thread: analysis takes a while on big ones)."""
        from nb2cwl.integrations.notebook_view import compile_view

        notebook = self.notebook_path(data.get("path"))
        content = data.get("content")
        if content is not None and not isinstance(content, dict):
            raise web.HTTPError(400, "content must be a notebook (nbformat JSON)")
        try:
            return await IOLoop.current().run_in_executor(
                None, compile_view, notebook, content, data.get("deployment"), None,
                granularity_of(data))
        except Nb2CwlError as exc:
            raise web.HTTPError(400, str(exc)) from None


def granularity_of(data: dict[str, Any]) -> str:
    """The body's step granularity, as `nb2cwl run --granularity` takes it (default auto)."""
    granularity = data.get("granularity") or "auto"
    if granularity not in GRANULARITIES:
        raise web.HTTPError(400, f"granularity must be one of {', '.join(GRANULARITIES)}")
    return str(granularity)


class DeploymentsHandler(_Handler):
    """GET deployments?path=NB: every deployment, validated and probed."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        from nb2cwl.integrations.deployment_list import list_deployments

        workflow = None
        path = self.get_argument("path", None)
        if path:
            workflow = await self.compiled({"path": path})
        found = await IOLoop.current().run_in_executor(
            None, list_deployments, workflow, self.nb2cwl.deployment_file or None)
        self.send({"default": "local", "deployments": [d.to_json() for d in found]})


class GraphHandler(_Handler):
    """POST graph {path, content?, deployment?, granularity?}: the steps, edges, cells and the
    SVG."""

    @web.authenticated
    @authorized
    async def post(self) -> None:
        from nb2cwl.integrations.notebook_view import graph_payload

        workflow = await self.compiled(self.body())
        self.send(graph_payload(workflow))


class PlanHandler(_Handler):
    """POST plan {path, content?, deployment?, granularity?}: what "Run changed" would run
    again."""

    @web.authenticated
    @authorized
    async def post(self) -> None:
        from nb2cwl.integrations.notebook_view import compile_view
        from nb2cwl.integrations.plan import plan_changes

        data = self.body()
        now = await self.compiled(data)
        store = self.nb2cwl.store
        last_run = store.last_finished(self.notebook_path(data.get("path")))
        last = None
        if last_run is not None:
            snapshot = os.path.join(last_run.folder, "notebook.ipynb")
            try:
                with open(snapshot, encoding="utf-8") as handle:
                    content = json.load(handle)
                last = await IOLoop.current().run_in_executor(
                    None, compile_view, last_run.notebook, content,
                    last_run.meta.get("deployment"), None, last_run.meta.get("granularity"))
            except (OSError, ValueError, Nb2CwlError):
                last = None  # an unreadable record: as if there were no earlier run
        self.send(plan_changes(now, last, last_run.id if last_run is not None else None))


class RunsHandler(_Handler):
    """GET runs?path=NB: the runs, newest first. POST runs {path, content?, deployment?,
    granularity?, mode, cells?}: start one."""

    @web.authenticated
    @authorized
    def get(self) -> None:
        path = self.get_argument("path", None)
        notebook = self.notebook_path(path) if path else None
        self.send({"runs": [run.to_json() for run in self.nb2cwl.store.runs(notebook)]})

    @web.authenticated
    @authorized
    def post(self) -> None:
        data = self.body()
        notebook = self.notebook_path(data.get("path"))
        mode = data.get("mode", "all")
        if mode not in MODES:
            raise web.HTTPError(400, f"mode must be one of {', '.join(MODES)}")
        cells = data.get("cells") or []
        if not isinstance(cells, list) or not all(isinstance(c, str) for c in cells):
            raise web.HTTPError(400, "cells must be a list of cell ids")
        if mode == "selected" and not cells:
            raise web.HTTPError(400, "mode 'selected' needs the cells to run")
        content = data.get("content")
        if content is not None and not isinstance(content, dict):
            raise web.HTTPError(400, "content must be a notebook (nbformat JSON)")
        store = self.nb2cwl.store
        going = store.active(notebook)
        if going is not None:
            raise web.HTTPError(409, f"run {going.id} of {data['path']} is still going: "
                                "cancel it or wait for it")
        request = RunRequest(notebook=notebook, path=str(data["path"]).lstrip("/"),
                             deployment=data.get("deployment") or None, mode=mode,
                             granularity=granularity_of(data),
                             cells=tuple(cells) if mode == "selected" else (), content=content)
        try:
            run = store.start(request)
        except (OSError, ValueError, Nb2CwlError) as exc:
            raise web.HTTPError(400, str(exc)) from None
        self.nb2cwl.relay.follow(run)
        self.set_header("Location", url_path_join(self.base_url, "nb2cwl/api/runs", run.id))
        self.send(run.to_json(), 201)


class RunHandler(_Handler):
    """GET runs/ID: the run with every step's and cell's state so far."""

    def find(self, run_id: str) -> Run:
        run = self.nb2cwl.store.get(run_id)
        if run is None:
            raise web.HTTPError(404, f"no run {run_id}")
        return run

    @web.authenticated
    @authorized
    def get(self, run_id: str) -> None:
        self.send(self.find(run_id).to_json(detail=True))


class CancelHandler(RunHandler):
    """POST runs/ID/cancel: stop the run and everything it started."""

    @web.authenticated
    @authorized
    def post(self, run_id: str) -> None:
        run = self.find(run_id)
        if run.status == "running":
            self.nb2cwl.store.cancel(run)
        self.send(run.to_json(), 202)


class FilesHandler(RunHandler):
    """GET runs/ID/files/KIND: the run's packed CWL, its Workflow RO-Crate bundle, its executed
    notebook or its log, as a download."""

    @web.authenticated
    @authorized
    async def get(self, run_id: str, kind: str) -> None:
        from nb2cwl.integrations.run_files import RunFileMissing, run_file

        run = self.find(run_id)
        try:
            path, name, mime = await IOLoop.current().run_in_executor(
                None, run_file, run, kind, self.nb2cwl.store)
        except RunFileMissing as exc:
            raise web.HTTPError(exc.status, str(exc)) from None
        self.set_header("Content-Disposition", f'attachment; filename="{name}"')
        with open(path, "rb") as handle:
            self.finish(handle.read(), set_content_type=mime)


def handlers() -> list[tuple[str, type]]:
    """The URL patterns (the server prefixes its base URL)."""
    base = "/nb2cwl/api"
    run = r"(?P<run_id>[A-Za-z0-9_.-]+)"
    return [
        (f"{base}/deployments", DeploymentsHandler),
        (f"{base}/graph", GraphHandler),
        (f"{base}/plan", PlanHandler),
        (f"{base}/runs", RunsHandler),
        (f"{base}/runs/{run}", RunHandler),
        (f"{base}/runs/{run}/cancel", CancelHandler),
        (f"{base}/runs/{run}/files/(?P<kind>cwl|crate|notebook|logs)", FilesHandler),
    ]
