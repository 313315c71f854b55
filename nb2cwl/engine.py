"""The StreamFlow process of `nb2cwl run` (the engine), started while the notebook compiles.

`python -c "from nb2cwl.engine import serve; serve()"` imports StreamFlow (most of its start-up
time), then waits for its command line on stdin and runs it. Besides, it

- tags what StreamFlow starts for this run with the run's token (NB2CWL_RUN, which the local
  steps inherit): a label on every Docker container and a comment on every Slurm job, so that
  `nb2cwl.stopping` finds them all when the run is stopped, even those StreamFlow never logged;
- answers SIGINT by cancelling the workflow even if nb2cwl was started with SIGINT ignored (a
  background job of a script): SIGINT is how nb2cwl asks StreamFlow to stop;
- gets SIGHUP from the kernel when the nb2cwl process dies without stopping it (SIGKILL, or any
  signal nb2cwl does not handle), and then starts `python -m nb2cwl.stopping` to stop the run,
  as nb2cwl would have;
- reads each step's tool file once: cwl-utils 0.42's type check reads a step's tool file again
  for every input and output of the step, and StreamFlow's translation once more (a third of
  a second of a two-step workflow's start, on the path to its first step);
- reads the CWL documents nb2cwl writes (JSON, which is YAML too) with Python's JSON parser:
  cwl-utils' round-trip YAML parser, pure Python, takes a tenth of a second for each of them;
- puts the local steps' folders in the run's own working folder (NB2CWL_WORKDIR, which
  nb2cwl removes when the run ends) instead of `$TMPDIR/streamflow`, where StreamFlow leaves
  them for good (nb2cwl.scratch), unless the StreamFlow file names a `workdir`;
- leaves unimported what a run may not use (Kubernetes, Helm, SSH, aiohttp: stand-ins in
  nb2cwl.engine_imports), and registers StreamFlow's plugins and builds its configuration
  schema before the run is asked for, while the notebook compiles;
- counts a Slurm job as ended once its batch script has: StreamFlow waits while the job is
  COMPLETING too, and a job with a lost node stays so until Slurm declares the node down
  (SlurmdTimeout: minutes), though the step failed and said why long before.

The hooks patch methods of StreamFlow 0.2.0rc3 (the pinned version); should they be missing,
the run goes on untagged and a stop finds the Slurm jobs by the ids in StreamFlow's log only.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import json
import os
import signal
import subprocess
import sys
from typing import Any

from nb2cwl.engine_imports import (
    KUBERNETES,
    SSH,
    defer_connectors,
    defer_expressions,
    defer_http,
)
from nb2cwl.imports import skip_unused_imports
from nb2cwl.scratch import WORKDIR_ENV
from nb2cwl.slurm_queue import SQUEUE_FORMAT, queue_states
from nb2cwl.stopping import RUN_ENV, TAG, shield

PARENT_ENV = "NB2CWL_PARENT"  # the pid of the nb2cwl process that started this one
NO_KUBERNETES_ENV = "NB2CWL_NO_KUBERNETES"  # set: no step of the run uses Kubernetes or Helm
_PR_SET_PDEATHSIG = 1


def serve() -> None:
    """Run StreamFlow with the command line that arrives on stdin (exit at once on EOF): a
    JSON list of arguments, or {"argv": [...], "env": {...}} with the run's own environment
    variables (an engine started before its run was known: nb2cwl.standby)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    parent = _watch_parent()
    if os.environ.get(NO_KUBERNETES_ENV):
        defer_connectors(KUBERNETES)
    defer_connectors(SSH)  # imported if a deployment uses SSH (nb2cwl.engine_imports)
    defer_http()
    defer_expressions()
    skip_unused_imports()
    from streamflow.main import run  # the slow part, overlapping with compiling

    _tag(os.environ.get(RUN_ENV, ""))
    _end_jobs_with_their_scripts()
    _local_work_in_the_runs_folder()
    _read_each_tool_once()
    _read_json_as_json()
    _prepare_for_any_run()
    from nb2cwl.backends import writer  # noqa: F401  (while the notebook compiles)
    from nb2cwl.backends.write_request import FAILED, write_saved

    line = sys.stdin.readline()
    if not line.strip():  # nb2cwl is gone, or compiling failed
        sys.exit(0)
    request = json.loads(line)
    compiled = None
    if isinstance(request, dict):  # the steps inherit the run's variables from here
        os.environ.update(request.get("env") or {})
        compiled = request.get("write")  # the compiled workflow, to write first
        request = request["argv"]
    sys.argv = ["streamflow", *request]
    if parent and os.getppid() != parent:  # nb2cwl died meanwhile: run nothing
        sys.exit(1)
    if compiled:
        with shield():  # a signal waits until the folder is written (not a SIGKILL)
            failure = write_saved(compiled)
        if failure is not None:
            print(FAILED + failure, flush=True)
            sys.exit(2)
        if parent and os.getppid() != parent:  # nb2cwl died while it was written
            sys.exit(1)
    status = run()
    gc.freeze()  # no final collection of StreamFlow's objects: exits about 0.3 s sooner
    sys.exit(status)


def _tag(token: str) -> None:
    if not token:
        return
    try:
        from streamflow.deployment.connector.container import DockerConnector
        from streamflow.deployment.connector.queue_manager import QueueManagerConnector
    except ImportError:
        return
    label = f"{TAG}={token}"
    init = DockerConnector.__init__

    @functools.wraps(init)
    def labelled(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.label = [*(getattr(self, "label", None) or []), label]

    submit = QueueManagerConnector.run

    @functools.wraps(submit)
    async def commented(self: Any, location: Any, command: list[str], *args: Any,
                        **kwargs: Any) -> Any:
        # SlurmConnector._run_batch_command submits through here: echo SCRIPT | ... sbatch
        # --parsable ...; StreamFlow sets no --comment of its own
        if kwargs.get("job_name") is None and "sbatch" in command and "--parsable" in command:
            at = command.index("sbatch") + 1
            command = [*command[:at], f"--comment={label}", *command[at:]]
        return await submit(self, location, command, *args, **kwargs)

    DockerConnector.__init__ = labelled  # type: ignore[method-assign]
    QueueManagerConnector.run = commented  # type: ignore[method-assign]


def _local_work_in_the_runs_folder() -> None:
    try:
        from streamflow.core.deployment import Target
    except ImportError:
        return
    init = Target.__init__

    @functools.wraps(init)
    def in_run_folder(self: Any, deployment: Any, *args: Any, **kwargs: Any) -> None:
        init(self, deployment, *args, **kwargs)
        folder = os.environ.get(WORKDIR_ENV)  # read now: a waiting engine learns it late
        if folder and deployment.type == "local" and not deployment.workdir and not (
                kwargs.get("workdir") or (args[2:3] and args[2])):
            self.workdir = folder

    Target.__init__ = in_run_folder  # type: ignore[method-assign]


def _end_jobs_with_their_scripts() -> None:
    """A Slurm job is over once its batch script has ended (COMPLETING), and a job Slurm will
    never start is cancelled and fails its own step with Slurm's reason instead of waiting for
    ever (nb2cwl.slurm_queue). Every step's polling sees every job of the connector, so the
    refusal is kept by job and raised when that job's step asks for its result."""
    try:
        from streamflow.core.exception import WorkflowExecutionException
        from streamflow.deployment.connector.queue_manager import SlurmConnector
    except ImportError:
        return
    running, output, returncode = (SlurmConnector._get_running_jobs,
                                   SlurmConnector._get_output, SlurmConnector._get_returncode)
    refused: dict[str, str] = {}  # job id -> why Slurm will never start it

    @functools.wraps(running)
    async def still_running(self: Any, location: Any) -> Any:
        jobs = await running(self, location)
        if not jobs:
            return jobs
        stdout, _ = await super(SlurmConnector, self).run(
            location=location, command=["squeue", "-h", "-j", ",".join(jobs), "-t",
                                        "PENDING,COMPLETING", "-O", SQUEUE_FORMAT],
            capture_output=True)
        queued = queue_states(str(stdout))
        never = [job for job in queued if job.never_starts and job.job not in refused]
        if never:
            await self._remove_jobs(location, [job.job for job in never])
            refused.update({job.job: job.refusal() for job in never})
        over = {job.job for job in queued if job.completing} | set(refused)
        return [job for job in jobs if job not in over]

    def refusal_first(method: Any) -> Any:
        @functools.wraps(method)
        async def wrapped(self: Any, job_id: str, location: Any) -> Any:
            if job_id in refused:
                raise WorkflowExecutionException(refused[job_id])
            return await method(self, job_id, location)

        return wrapped

    SlurmConnector._get_running_jobs = still_running  # type: ignore[method-assign]
    SlurmConnector._get_output = refusal_first(output)  # type: ignore[method-assign]
    SlurmConnector._get_returncode = refusal_first(returncode)  # type: ignore[method-assign]


def _read_each_tool_once() -> None:
    """cwl-utils' static type check (`load_step`, reading-only but for its idempotent stdout
    and stderr conversion) loads a step's tool once per step, not once per port; the document
    it loaded is then handed to StreamFlow's translation of that step, once, instead of
    being read a third time. Each translation still gets a document nobody else translates."""
    try:
        import cwl_utils.parser as parser
        import cwl_utils.parser.utils as utils
    except ImportError:
        return
    load_document, load_step = parser.load_document_by_uri, utils.load_step
    if not callable(load_document) or not callable(load_step):
        return
    checked: dict[int, tuple[Any, Any]] = {}  # id(step) -> (step, its tool)
    spare: dict[tuple[str, int], Any] = {}  # a tool the check loaded, for its translation
    checking = [False]

    @functools.wraps(load_step)
    def load_step_once(step: Any) -> Any:
        if id(step) not in checked:
            checking[0] = True
            try:
                checked[id(step)] = (step, load_step(step))
            finally:
                checking[0] = False
        return checked[id(step)][1]

    @functools.wraps(load_document)
    def load_document_once(path: Any, loadingOptions: Any = None, *args: Any,
                           **kwargs: Any) -> Any:
        key = (str(path), id(loadingOptions))
        if not checking[0] and key in spare:
            return spare.pop(key)
        document = load_document(path, loadingOptions, *args, **kwargs)
        if checking[0] and loadingOptions is not None:
            spare.setdefault(key, document)
        return document

    parser.load_document_by_uri = load_document_once
    utils.load_step = load_step_once


def _prepare_for_any_run() -> None:
    """Do, while the notebook compiles, what StreamFlow does first in every run: register its
    plugins, build its configuration's schema, and make cwl-utils' first loading options
    (which import the fetcher's caching libraries). A tenth of a second before the first step,
    taken off a run's path."""
    import streamflow.main as streamflow_main
    from cwl_utils.parser import cwl_v1_2
    from ruamel.yaml import YAML
    from streamflow.config.schema import SfSchema
    from streamflow.config.validator import SfValidator

    try:
        streamflow_main.load_extensions()
        schema = SfSchema()
        cwl_v1_2.LoadingOptions()
    except Exception:  # StreamFlow does it again, and says what failed
        return

    class Validator(SfValidator):
        def __init__(self) -> None:
            self.schema = schema
            self.yaml = YAML(typ="safe")

    streamflow_main.load_extensions = lambda: None  # type: ignore[assignment]
    streamflow_main.SfValidator = Validator  # type: ignore[misc]


def _read_json_as_json() -> None:
    """A CWL document that is JSON (after a `#!` line) is the same data read by Python's JSON
    parser, as JSON is a subset of YAML 1.2; any other document is read as before."""
    try:
        import cwl_utils.parser as parser
    except ImportError:
        return
    load_string, load_yaml = parser.load_document_by_string, parser.load_document_by_yaml
    if not callable(load_string) or not callable(load_yaml):
        return

    @functools.wraps(load_string)
    def load_document_by_string(string: str, uri: str, loadingOptions: Any = None,
                                *args: Any, **kwargs: Any) -> Any:
        body = string.split("\n", 1)[-1] if string.startswith("#!") else string
        if body.lstrip().startswith("{"):
            try:
                document = json.loads(body)
            except ValueError:
                document = None
            if isinstance(document, dict):
                return load_yaml(document, uri, loadingOptions, *args, **kwargs)
        return load_string(string, uri, loadingOptions, *args, **kwargs)

    parser.load_document_by_string = load_document_by_string


def _watch_parent() -> int:
    """Get SIGHUP when nb2cwl dies (Linux), and then stop the run in its place; nb2cwl's pid."""
    parent = int(os.environ.get(PARENT_ENV, "0") or 0)
    if not parent:
        return 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGHUP, 0, 0, 0) != 0:
            return parent
    except (OSError, AttributeError):
        return parent

    def orphaned(_signum: int, _frame: object) -> None:
        if os.getppid() == parent:  # a thread of nb2cwl ended, not nb2cwl
            return
        if sys.argv[:2] != ["streamflow", "run"]:  # still waiting: stdin's EOF ends this process
            return
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # once
        command = [sys.executable, "-m", "nb2cwl.stopping", str(os.getpid()),
                   os.environ.get(RUN_ENV, ""), sys.argv[-1]]
        env = {k: v for k, v in os.environ.items() if k not in (RUN_ENV, PARENT_ENV)}
        subprocess.Popen(command, env=env, start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    signal.signal(signal.SIGHUP, orphaned)
    return parent
