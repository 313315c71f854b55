"""The warm step server of `nb2cwl run` (runtime/forkserver.py, runtime/forkclient.py).

A local step hands itself to a child forked from the server; the child must be that step
process in every way that matters (streams, cwd, environment, argv, exit status, signals), and
nothing may outlive the step process that asked for it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import default_stop_signals

from nb2cwl.backends.naming import RUNTIME_ARCHIVE, RUNTIME_SOURCE
from nb2cwl.backends.runtime_archive import write_runtime_archive
from nb2cwl.cli import main

# a stand-in for a generated step script: the launcher's shape, with a body the test chooses
SCRIPT = '''
def _run(argv):
{body}


def _main():
    import os
    import sys

    argv = sys.argv[1:]
    runtime = argv[argv.index("--runtime") + 1]
    runtime = os.path.abspath(runtime)  # a folder's parent, or a workflow's zip itself
    sys.path.insert(0, runtime if os.path.isfile(runtime) else os.path.dirname(runtime))
    from nb2cwl_runtime.forkclient import run_on_server

    status = run_on_server(__file__, argv)
    if status is not None:
        return status
    print("ran-in-place", flush=True)
    return _run(argv)


if __name__ == "__main__":
    raise SystemExit(_main())
'''


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    runtime = tmp_path / "nb2cwl_runtime"
    runtime.mkdir()
    for source in RUNTIME_SOURCE.glob("*.py"):
        shutil.copyfile(source, runtime / source.name)
    return tmp_path


@pytest.fixture
def server(workdir: Path) -> Iterator[tuple[subprocess.Popen, str]]:
    socket_path = str(workdir / "server.sock")
    process = subprocess.Popen([sys.executable, "-m", "nb2cwl_runtime.forkserver", socket_path],
                               cwd=workdir, stderr=subprocess.PIPE,
                               preexec_fn=default_stop_signals)
    deadline = time.monotonic() + 20
    while not os.path.exists(socket_path):
        assert process.poll() is None, process.stderr.read()  # type: ignore[union-attr]
        assert time.monotonic() < deadline
        time.sleep(0.02)
    yield process, socket_path
    process.terminate()
    process.wait(10)


def _script(workdir: Path, body: str) -> Path:
    path = workdir / "steps" / "step.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(SCRIPT.format(body=textwrap.indent(textwrap.dedent(body), "    ")))
    return path


def _start(script: Path, workdir: Path, socket_path: str, *argv: str,
           runtime: str = "nb2cwl_runtime", **env: str) -> subprocess.Popen:
    cwd = workdir / "job"
    cwd.mkdir(exist_ok=True)
    environment = dict(os.environ, NB2CWL_STEP_SERVER=socket_path, **env)
    return subprocess.Popen([sys.executable, "-S", str(script), "--runtime",
                             str(workdir / runtime), *argv], cwd=cwd, env=environment,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_stop_signals)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def test_the_child_is_the_step_process(server, workdir: Path) -> None:
    process, socket_path = server
    script = _script(workdir, """
        import os, sys
        print("parent", os.getppid(), "cwd", os.path.basename(os.getcwd()))
        print("env", os.environ.get("STEP_ONLY"), "server" in str(os.environ.get(
            "NB2CWL_STEP_SERVER")))
        print("argv", sys.argv[1:], "path0", os.path.basename(sys.path[1]))
        print("to stderr", file=sys.stderr)
        return 7
    """)
    step = _start(script, workdir, socket_path, "--x", "1", STEP_ONLY="yes")
    out, err = step.communicate(timeout=30)
    assert step.returncode == 7, err
    assert "ran-in-place" not in out
    assert f"parent {process.pid} cwd job" in out  # forked by the server, in the step's folder
    assert "env yes False" in out  # the step's environment, without the server's address
    assert "'--x', '1'" in out and "path0 steps" in out
    assert "to stderr" in err


def test_a_child_killed_by_a_signal_ends_its_step_process_the_same_way(server,
                                                                       workdir: Path) -> None:
    _, socket_path = server
    script = _script(workdir, """
        import os, signal
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    step = _start(script, workdir, socket_path)
    step.communicate(timeout=30)
    assert step.returncode == -signal.SIGKILL


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signals_to_the_step_process_reach_the_child(server, workdir: Path,
                                                     signum: int) -> None:
    _, socket_path = server
    marker = workdir / "child.pid"
    script = _script(workdir, f"""
        import os, subprocess, time
        grandchild = subprocess.Popen(["sleep", "60"])
        with open({str(marker)!r}, "w") as handle:
            handle.write(f"{{os.getpid()}} {{grandchild.pid}}")
        time.sleep(60)
    """)
    step = _start(script, workdir, socket_path)
    deadline = time.monotonic() + 20
    while not marker.exists() or len(marker.read_text().split()) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    child, grandchild = map(int, marker.read_text().split())
    step.send_signal(signum)
    step.communicate(timeout=30)
    assert step.returncode != 0
    deadline = time.monotonic() + 5
    while (_alive(child) or _alive(grandchild)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child) and not _alive(grandchild)  # the child's whole group


def test_a_killed_step_process_takes_its_child_along(server, workdir: Path) -> None:
    _, socket_path = server
    marker = workdir / "child.pid"
    script = _script(workdir, f"""
        import os, time
        with open({str(marker)!r}, "w") as handle:
            handle.write(str(os.getpid()))
        time.sleep(60)
    """)
    step = _start(script, workdir, socket_path)
    deadline = time.monotonic() + 20
    while not marker.exists() or not marker.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    child = int(marker.read_text())
    step.kill()  # SIGKILL: nothing forwards it
    step.communicate(timeout=30)
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_without_a_server_or_with_another_runtime_the_step_runs_in_place(
        server, workdir: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    _, socket_path = server
    script = _script(workdir, """
        print("ran")
        return 0
    """)
    gone = _start(script, workdir, str(workdir / "no-such-socket"))
    out, err = gone.communicate(timeout=30)
    assert gone.returncode == 0 and "ran-in-place" in out, err
    other = tmp_path_factory.mktemp("other")
    shutil.copytree(workdir / "nb2cwl_runtime", other / "nb2cwl_runtime")
    with open(other / "nb2cwl_runtime" / "step.py", "a") as handle:
        handle.write("# another version\n")
    elsewhere = _script(other, "print('ran')\nreturn 0")
    declined = _start(elsewhere, other, socket_path)
    out, err = declined.communicate(timeout=30)
    assert declined.returncode == 0 and "ran-in-place" in out, err


def test_a_copy_of_the_servers_runtime_elsewhere_is_served(
        server, workdir: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The server of `nb2cwl run` starts from its own copy of the runtime, before the workflow
    (and its copy) is written: a step of a copy with the same files is served."""
    _, socket_path = server
    other = tmp_path_factory.mktemp("copy")
    shutil.copytree(workdir / "nb2cwl_runtime", other / "nb2cwl_runtime")
    elsewhere = _script(other, "print('ran')\nreturn 0")
    served = _start(elsewhere, other, socket_path)
    out, err = served.communicate(timeout=30)
    assert served.returncode == 0 and out == "ran\n", (out, err)


def test_a_workflows_zip_of_the_same_runtime_is_served_and_another_is_not(
        server, workdir: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A compiled workflow gives its steps the runtime as one zip (backends/runtime_archive):
    the server serves a step whose zip holds its own files, and declines one whose zip holds
    another version; that step then runs in place, imported from its zip."""
    _, socket_path = server
    same = tmp_path_factory.mktemp("zip")
    write_runtime_archive(same / RUNTIME_ARCHIVE)
    body = "import nb2cwl_runtime\nprint(nb2cwl_runtime.__file__)\nreturn 0"
    served = _start(_script(same, body), same, socket_path, runtime=RUNTIME_ARCHIVE)
    out, err = served.communicate(timeout=30)
    assert served.returncode == 0 and "ran-in-place" not in out, (out, err)
    assert RUNTIME_ARCHIVE not in out  # the server's own copy, imported before the fork
    other = tmp_path_factory.mktemp("other-zip")
    with zipfile.ZipFile(same / RUNTIME_ARCHIVE) as source, zipfile.ZipFile(
            other / RUNTIME_ARCHIVE, "w") as changed:
        for entry in source.namelist():
            extra = b"# another version\n" if entry.endswith("/step.py") else b""
            changed.writestr(entry, source.read(entry) + extra)
    declined = _start(_script(other, body), other, socket_path, runtime=RUNTIME_ARCHIVE)
    out, err = declined.communicate(timeout=30)
    assert declined.returncode == 0 and "ran-in-place" in out, (out, err)
    assert f"{other / RUNTIME_ARCHIVE}/nb2cwl_runtime/__init__.py" in out


def test_a_forked_step_imports_nothing_the_server_could_have(workdir: Path) -> None:
    """The server imports what making a step's shell and running a cell import (the kernel's
    magics with it), so that each forked step does not import them again, about 10 ms each."""
    probe = textwrap.dedent("""
        import sys, types
        from nb2cwl_runtime import forkserver, kernel_shell
        forkserver._warm_up()
        before = set(sys.modules)
        executor = kernel_shell.create(types.ModuleType("__main__"), [])
        ok, error = executor.run_cell({"code": "x = 1\\nprint(x + 1)"}, 1)
        assert ok, error
        print(sorted(set(sys.modules) - before))
    """)
    done = subprocess.run([sys.executable, "-c", probe], cwd=workdir, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout


def _forkservers() -> set[int]:
    """The step servers this process started (an in-process `nb2cwl run`: not other tests')."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    command = handle.read()
                with open(f"/proc/{entry}/stat") as handle:
                    parent = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if b"nb2cwl_runtime.forkserver" in command and parent == os.getpid():
                found.add(int(entry))
    return found


@pytest.mark.streamflow
def test_nb2cwl_run_starts_local_steps_from_its_server_and_stops_it(tmp_path: Path) -> None:
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(cells=[
        new_code_cell("import os, sys\nx = 41"),
        new_code_cell("print(x + 1, 'site' in sys.modules, sys.flags.no_site)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    path = tmp_path / "served.ipynb"
    nbformat.write(nb, path)
    before = _forkservers()
    old = os.environ["PATH"]
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + old
    try:
        assert main(["run", str(path), "-o", str(tmp_path / "wf"), "--quiet",
                     "--granularity", "cell"]) == 0
    finally:
        os.environ["PATH"] = old
    executed = nbformat.read(tmp_path / "wf" / "runs" / "1" / "served.executed.ipynb", 4)
    # a child of the server: forked from an interpreter that imported site (a step process
    # of its own starts with -S and imports site only when it runs the step itself)
    assert executed.cells[1].outputs[0]["text"] == "42 True 0\n"
    assert _forkservers() <= before  # gone with the run
    tool = (tmp_path / "wf" / "tools" / "cell_1.cwl").read_text()
    assert '"-S"' in tool


@pytest.mark.streamflow
def test_a_plain_streamflow_run_runs_the_same_steps_without_a_server(tmp_path: Path) -> None:
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(cells=[new_code_cell("import sys\nx = 41"),
                             new_code_cell("print(x + 1, 'site' in sys.modules)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    path = tmp_path / "plain.ipynb"
    nbformat.write(nb, path)
    assert main([str(path), "-o", str(tmp_path / "wf"), "--granularity", "cell"]) == 0
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    env.pop("NB2CWL_STEP_SERVER", None)
    done = subprocess.run([os.path.join(os.path.dirname(sys.executable), "streamflow"), "run",
                           "--outdir", str(tmp_path / "out"), str(tmp_path / "wf" /
                                                                  "streamflow.yml")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    executed = nbformat.read(tmp_path / "out" / "plain.executed.ipynb", 4)
    assert executed.cells[1].outputs[0]["text"] == "42 True\n"  # site imported by the step


def test_a_server_whose_run_died_before_it_started_exits(workdir: Path) -> None:
    """`nb2cwl run` killed (SIGKILL) in the moment between starting its step server and the
    server asking Linux to end it with its parent: the server sees it has another parent than
    the run that started it, and exits instead of living on."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    env = dict(os.environ, NB2CWL_SERVER_PARENT=str(gone.pid))
    process = subprocess.Popen([sys.executable, "-m", "nb2cwl_runtime.forkserver",
                                str(workdir / "orphan.sock")], cwd=workdir, env=env,
                               preexec_fn=default_stop_signals)
    try:
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
