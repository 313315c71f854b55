"""The step server of a run (runtime/forkserver.py): local steps start as its warm children.

`nb2cwl run` starts one while the notebook compiles, importing the notebook's opening
libraries (analysis/preload.py). A long-lived process (nb2cwl.standby, in the Jupyter server)
starts one before its run is known: it imports the runtime and IPython, and the run names the
libraries when it comes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess

from nb2cwl.backends.naming import RUNTIME_PACKAGE, RUNTIME_SOURCE
from nb2cwl.engine import PARENT_ENV
from nb2cwl.runtime.forkclient import SERVER_ENV
from nb2cwl.runtime.forkserver import LATER
from nb2cwl.runtime.forkserver import PARENT_ENV as SERVER_PARENT_ENV
from nb2cwl.scratch import scratch_folder
from nb2cwl.stopping import RUN_ENV

#: A server started before its run was asked for (nb2cwl.standby), for the next run here.
_warm: list[StepServer] = []


def keep_warm(server: StepServer) -> None:
    """`server` (started with `start_warm`) serves this process's next run."""
    _warm[:] = [server]


def stop_warm() -> None:
    """Stop the warm server no run took (the run failed before it started its steps)."""
    while _warm:
        _warm.pop().stop()


def take_step_server() -> StepServer:
    """The warm step server, if one waits; else a new one (started by its run)."""
    return _warm.pop() if _warm else StepServer()


class StepServer:
    """The run's step server (runtime/forkserver.py): local steps start as its warm children
    instead of fresh interpreters, about 0.2 s sooner each.

    Its socket lives in a private folder (0700) of its own; the steps learn the path from
    NB2CWL_STEP_SERVER, which only `nb2cwl run` sets. It carries the run's token like every
    process of the run, so stopping the run stops it and its children too.

    It runs its own copy of the runtime, in that folder, so that it can start (and import the
    notebook's libraries) while the notebook compiles; it serves the steps of a workflow whose
    runtime copy has the same files.
    """

    def __init__(self) -> None:
        self.directory = scratch_folder("steps")
        self.path = os.path.join(self.directory, "server")
        self.process: subprocess.Popen[bytes] | None = None
        self.preload: tuple[str, ...] = ()
        self._started_with: tuple[str, dict[str, str], str | None] | None = None
        # started warm, its libraries not yet sent: its interpreter and run token
        self._waiting: tuple[str, str | None] | None = None

    def start(self, python: str, env: dict[str, str],
              preload: tuple[str, ...] = (), beside: str | None = None) -> None:
        """Start it with the steps' interpreter; it imports the libraries `preload` names
        (Workflow.preload) once for every step, except one a file or folder of the same name
        beside the notebook (`beside`) would shadow. A server started warm (`start_warm`)
        with the same interpreter is given those libraries instead."""
        executable, env = _resolved(python, env)
        if executable is None:  # the steps will say so themselves
            self._end()
            return
        self.preload = preload
        self._started_with = (python, env, beside)
        if beside is not None:
            preload = tuple(name for name in preload
                            if not os.path.exists(os.path.join(beside, name + ".py"))
                            and not os.path.exists(os.path.join(beside, name)))
        if self._waiting is not None:
            if self._waiting == (executable, env.get(RUN_ENV)) and self._send(preload):
                return
            self._end()  # another interpreter or run (its engine was new), or it died: anew
        self._spawn(executable, env, [*preload])

    def start_warm(self, python: str, env: dict[str, str]) -> None:
        """Start it before its run is known (a long-lived process's standby run): it imports
        the runtime and IPython now, and the notebook's libraries when `start` names them."""
        executable, env = _resolved(python, env)
        if executable is None:
            return
        self._spawn(executable, env, [LATER])
        self._waiting = (executable, env.get(RUN_ENV))  # the run's token: stop_run finds it

    def _spawn(self, executable: str, env: dict[str, str], arguments: list[str]) -> None:
        env = dict(env)
        env[SERVER_PARENT_ENV] = str(os.getpid())  # killed before the server started: it exits
        runtime = os.path.join(self.directory, RUNTIME_PACKAGE)
        if not os.path.isdir(runtime):
            os.mkdir(runtime)
            for source in sorted(RUNTIME_SOURCE.glob("*.py")):
                shutil.copyfile(source, os.path.join(runtime, source.name))
        self.process = subprocess.Popen(
            [executable, "-m", f"{RUNTIME_PACKAGE}.forkserver", self.path, *arguments],
            cwd=self.directory, env=env,
            stdin=subprocess.PIPE if arguments == [LATER] else subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def _send(self, preload: tuple[str, ...]) -> bool:
        """Give the warm server its libraries; False when it is gone."""
        self._waiting = None
        process = self.process
        if process is None or process.stdin is None or process.poll() is not None:
            return False
        try:
            process.stdin.write((json.dumps(list(preload)) + "\n").encode())
            process.stdin.close()
        except OSError:
            return False
        return True

    def preloading(self, preload: tuple[str, ...]) -> None:
        """Make sure it imports exactly `preload` (the compiled workflow's): start it again
        when it was started early with other libraries, or not at all."""
        if self._started_with is None or self.preload == preload:
            return
        python, env, beside = self._started_with
        self._end()
        self.start(python, env, preload, beside)

    def stop(self) -> None:
        """Stop it (its children have ended with the run) and remove its folder."""
        self._end()
        shutil.rmtree(self.directory, ignore_errors=True)

    def _end(self) -> None:
        """Stop the process and remove its socket (a new server binds the same path)."""
        self._waiting = None
        if self.process is not None and self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


def _resolved(python: str, env: dict[str, str]) -> tuple[str | None, dict[str, str]]:
    """The steps' interpreter found on the run's PATH, and the server's environment: the
    run's, without what only the steps' own processes get."""
    executable = shutil.which(python, path=env.get("PATH"))
    return executable, {k: v for k, v in env.items() if k not in (SERVER_ENV, PARENT_ENV)}
