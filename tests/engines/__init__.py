"""Real engines for the deployment tests: a Slurm cluster and a Docker engine on this machine.

Each fixture installs what it needs from Debian with apt-get when it is missing, starts its
daemons with all their state under a temporary directory, and stops them by pid at the end of
the session; the daemons are children of the session and get SIGTERM if it dies first. When
an engine cannot start here, the tests that need it are skipped with the reason; under CI
(CI=true) they fail instead, because CI must exercise them.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

import pytest

APT_TIMEOUT = 600


class EngineError(Exception):
    """An engine could not be installed or started."""


def engine_unavailable(reason: str) -> NoReturn:
    """Skip the tests that need the engine, or fail them under CI."""
    if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        pytest.fail(f"{reason} (CI is set: this engine must run here)", pytrace=False)
    pytest.skip(reason)


def run(command: Sequence[str], timeout: float = 60, env: dict[str, str] | None = None,
        check: bool = True, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Run `command`; raise EngineError with its output's tail when it fails or times out."""
    try:
        result = subprocess.run(list(command), capture_output=True, text=True, timeout=timeout,
                                env=env, **kwargs)  # type: ignore[call-overload]
    except FileNotFoundError:
        raise EngineError(f"{command[0]} is not installed") from None
    except subprocess.TimeoutExpired:
        raise EngineError(f"{' '.join(command[:3])} ... took more than {timeout:.0f} s") from None
    if check and result.returncode != 0:
        tail = (result.stdout + result.stderr).strip()[-1500:]
        raise EngineError(f"{' '.join(command[:4])} ... failed ({result.returncode}): {tail}")
    return result


def apt_install(packages: Sequence[str], binaries: Sequence[str]) -> None:
    """Install Debian `packages` unless every one of `binaries` is already on PATH."""
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    if all(shutil.which(b, path=path) for b in binaries):
        return
    if os.geteuid() != 0:
        raise EngineError(f"{', '.join(binaries)} missing and not root: cannot apt-get install "
                          f"{' '.join(packages)}")
    if not shutil.which("apt-get"):
        raise EngineError(f"{', '.join(binaries)} missing and apt-get is not available")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    # one install at a time: another fixture (the browser's, on the other worker) may be
    # installing, and apt-get fails at once on a held lock; dpkg's own lock is waited for too
    wait = ["-o", f"DPkg::Lock::Timeout={int(APT_TIMEOUT // 2)}"]
    with open(os.path.join(tempfile.gettempdir(), "nb2cwl-tests-apt.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if all(shutil.which(b, path=path) for b in binaries):
            return  # installed meanwhile
        run(["apt-get", *wait, "update", "-q"], timeout=APT_TIMEOUT, env=env)
        run(["apt-get", *wait, "install", "-y", "-q", "--no-install-recommends", *packages],
            timeout=APT_TIMEOUT, env=env)


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll `check` every 0.2 s until it is true; EngineError after `timeout` seconds."""
    end = time.monotonic() + timeout
    while not check():
        if time.monotonic() > end:
            raise EngineError(f"{what} did not happen within {timeout:.0f} s")
        time.sleep(0.2)


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the test session dies, even by SIGKILL (Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def start_daemon(command: Sequence[str], log: Path,
                 env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start a daemon in the foreground as a child of this session, logging to `log`.

    It is stopped with `stop_daemon`, and gets SIGTERM if the session dies first, so a killed
    test run leaves no daemons behind.
    """
    with log.open("ab") as out:
        try:
            return subprocess.Popen(list(command), stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env=env, start_new_session=True,
                                    preexec_fn=_die_with_parent)
        except FileNotFoundError:
            raise EngineError(f"{command[0]} is not installed") from None


def stop_daemon(process: subprocess.Popen[bytes], grace: float = 20) -> None:
    """TERM a daemon started by `start_daemon`, then KILL it after `grace` seconds."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
