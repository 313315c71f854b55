"""Workflows on a real two-node Slurm cluster (tests/engines/slurm_two_nodes.py).

Each node is a slurmd in its own network namespace with its own address and one CPU, so what
runs on two nodes really runs in two places that talk TCP. Proof of placement comes from the
steps themselves (SLURMD_NODENAME, the node's address) and from Slurm's job completion log.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import numpy as np
import pytest
from conftest import NOTEBOOKS
from deployment_cases import tuned_profile, write_notebook
from engines.slurm_two_nodes import NODES, TwoNodeCluster, start_node, wait_idle
from equivalence import per_cell, run_with_nbclient, run_with_workflow
from test_training import DETERMINISTIC_LOOP, HAS_TF, _weights

pytestmark = [pytest.mark.slurm, pytest.mark.streamflow]


@pytest.fixture
def cluster(slurm_two_nodes: TwoNodeCluster, monkeypatch: pytest.MonkeyPatch) -> TwoNodeCluster:
    """The two-node cluster, with SLURM_CONF naming it for this test (and its StreamFlow)."""
    monkeypatch.setenv("SLURM_CONF", str(slurm_two_nodes.conf))
    return slurm_two_nodes


def _profile(tmp_path: Path) -> Path:
    return tuned_profile("slurm", tmp_path / "slurm.yml", pollingInterval=1,
                         maxConcurrentJobs=4)


def _new_jobs(cluster: TwoNodeCluster, before: set[str]) -> list[dict[str, str]]:
    return [fields for job, fields in cluster.completed_jobs().items() if job not in before]


def test_srun_runs_one_task_per_node_in_separate_networks(cluster: TwoNodeCluster) -> None:
    done = subprocess.run(
        ["srun", "-N2", "-n2", "-l", "sh", "-c",
         "echo $(hostname) $(readlink /proc/self/ns/net) $SLURMD_NODENAME"],
        env=cluster.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    (host0, net0, node0), (host1, net1, node1) = (lines["0"].split(), lines["1"].split())
    assert (host0, node0, host1, node1) == ("node1", "node1", "node2", "node2")
    assert net0 != net1 and os.readlink("/proc/self/ns/net") not in (net0, net1)


SCATTER = [
    "import os, time\nimport numpy as np\nseeds = list(range(8))",
    "def simulate(seed):\n"
    "    time.sleep(0.5)  # the two chunks' jobs overlap, so one cannot wait for the other\n"
    "    rng = np.random.default_rng(seed)\n"
    "    walks = rng.normal(size=(40, 20_000)).cumsum(axis=1)\n"
    "    return round(float(walks.max(axis=1).mean()), 6)",
    "peaks = []\n"
    "for seed in seeds:\n"
    "    peaks.append((seed, simulate(seed), os.environ.get('SLURMD_NODENAME')))\n"
    "    print(f'seed {seed}: {peaks[-1][1]:.3f}')",
    "print(sum(p for _, p, _ in peaks))",
    "print('nodes', sorted({str(node) for *_, node in peaks}))",
]


def test_a_scattered_loop_runs_its_chunks_on_both_nodes(cluster: TwoNodeCluster,
                                                        tmp_path: Path) -> None:
    notebook = write_notebook(tmp_path / "walks.ipynb", *SCATTER)
    expected = run_with_nbclient(notebook, tmp_path / "kernel")
    before = set(cluster.completed_jobs())
    got, _ = run_with_workflow(
        notebook, tmp_path / "workflow", "--deployment", "slurm", "--chunks", "2",
        "--deployment-file", str(_profile(tmp_path)), "--no-cache")
    last = max(got)
    assert {i: v for i, v in got.items() if i != last} == \
        {i: v for i, v in expected.items() if i != last}  # every result as in Jupyter
    assert "nodes ['node1', 'node2']" in got[last][0]  # the chunks ran on both nodes
    assert expected[last] == ["stdout: nodes ['None']\n"]
    jobs = _new_jobs(cluster, before)
    assert {j["NodeList"] for j in jobs} == {"node1", "node2"}
    assert all(j["JobState"] == "COMPLETED" for j in jobs)
    assert not cluster.queued_jobs()


@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_training_runs_one_worker_per_node(cluster: TwoNodeCluster, tmp_path: Path) -> None:
    """A GradientTape loop with --resources @train=nodes=2: one Slurm job on both nodes, one
    worker per node (MultiWorkerMirroredStrategy over TCP between the nodes' addresses), and
    the weights of two replicas in one process, within 1e-5."""
    notebook = write_notebook(tmp_path / "loop.ipynb", *DETERMINISTIC_LOOP)
    before = set(cluster.completed_jobs())
    nodes, results = run_with_workflow(
        notebook, tmp_path / "nodes", "--deployment", "slurm", "--resources", "@train=nodes=2",
        "--deployment-file", str(_profile(tmp_path)), "--no-cache")
    (run,) = results.glob("training-*")
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["workers"] == 2 and metrics["replicas"] == 2
    jobs = _new_jobs(cluster, before)
    spanning = [j for j in jobs if j["NodeList"] == "node[1-2]"]
    assert len(spanning) == 1 and spanning[0]["NodeCnt"] == "2", jobs
    assert all(j["JobState"] == "COMPLETED" for j in jobs)

    devices, one_process = _devices_run(notebook, tmp_path)
    assert nodes == devices  # the same printed losses
    (reference,) = one_process.glob("training-*")
    for (name, a), (_, b) in zip(_weights(reference / "model.keras"),
                                 _weights(run / "model.keras"), strict=True):
        assert np.allclose(a, b, atol=1e-5), name
    assert not cluster.queued_jobs()


@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_a_plain_streamflow_run_trains_across_the_nodes(cluster: TwoNodeCluster,
                                                        tmp_path: Path) -> None:
    """The compiled workflow run by `streamflow run` itself (no `nb2cwl run` around it): the
    training step is still one job on both nodes with one worker each, and prints what two
    replicas in one process print; the trained model comes back as a workflow output."""
    notebook = write_notebook(tmp_path / "loop.ipynb", *DETERMINISTIC_LOOP)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    compiled = subprocess.run(
        [sys.executable, "-m", "nb2cwl", str(notebook), "-o", str(tmp_path / "wf"),
         "--deployment", "slurm", "--resources", "@train=nodes=2",
         "--deployment-file", str(_profile(tmp_path))],
        env=env, capture_output=True, text=True, timeout=300)
    assert compiled.returncode == 0, compiled.stderr
    before = set(cluster.completed_jobs())
    done = subprocess.run([os.path.join(os.path.dirname(sys.executable), "streamflow"), "run",
                           "--outdir", str(tmp_path / "out"), str(tmp_path / "wf" /
                                                                  "streamflow.yml")],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (run,) = (tmp_path / "out").glob("training-*")
    assert json.loads((run / "metrics.json").read_text())["workers"] == 2
    spanning = [j for j in _new_jobs(cluster, before) if j["NodeList"] == "node[1-2]"]
    assert len(spanning) == 1, _new_jobs(cluster, before)
    devices, one_process = _devices_run(notebook, tmp_path)
    executed = nbformat.read(next((tmp_path / "out").glob("*.executed.ipynb")), as_version=4)
    assert per_cell(executed) == devices
    (reference,) = one_process.glob("training-*")
    for (name, a), (_, b) in zip(_weights(reference / "model.keras"),
                                 _weights(run / "model.keras"), strict=True):
        assert np.allclose(a, b, atol=1e-5), name
    _until_gone(cluster)


KERAS_FIT = [
    "import numpy as np\nimport keras",
    "(x, y), _ = keras.datasets.fashion_mnist.load_data()\n"
    "x = x.reshape(len(x), -1).astype('float32') / 255\n"
    "print(x.shape, int(y.sum()), float(x.sum()))",
    "keras.utils.set_random_seed(3)\n"
    "model = keras.Sequential([keras.Input((784,)), keras.layers.Dense(16, activation='relu'),\n"
    "                          keras.layers.Dense(10)])\n"
    "model.compile(optimizer=keras.optimizers.SGD(0.05),\n"
    "              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))",
    "history = model.fit(x, y, batch_size=40, epochs=2, shuffle=False, verbose=0)\n"
    "print(len(history.history['loss']), 'epochs')",
]


@pytest.mark.skipif(not HAS_TF or importlib.util.find_spec("tf_keras") is None,
                    reason="TensorFlow or tf-keras is not installed")
def test_keras_fit_on_two_nodes_reads_the_kernels_data_set(
        cluster: TwoNodeCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keras fit with one worker per node (tf-keras, as several workers need) loads the data
    set from the kernel's KERAS_HOME, not from ~/.keras (tf-keras ignores KERAS_HOME; here
    ~/.keras is empty and nothing can be downloaded), and trains what two local workers do."""
    sys.path.insert(0, str(NOTEBOOKS))
    try:
        from make_fashion_mnist import write_fashion_mnist
    finally:
        sys.path.remove(str(NOTEBOOKS))
    write_fashion_mnist(tmp_path / "keras-home" / "datasets" / "fashion-mnist", train=200,
                        test=20, seed=0)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras-home"))
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no data set in ~/.keras
    notebook = write_notebook(tmp_path / "fit.ipynb", *KERAS_FIT)
    kernel = run_with_nbclient(notebook, tmp_path / "kernel")
    before = set(cluster.completed_jobs())
    nodes, results = run_with_workflow(
        notebook, tmp_path / "nodes", "--deployment", "slurm", "--resources", "@train=nodes=2",
        "--deployment-file", str(_profile(tmp_path)), "--no-cache")
    assert nodes[1] == kernel[1] and "(200, 784)" in kernel[1][0]  # the kernel's data
    (run,) = results.glob("training-*")
    assert json.loads((run / "metrics.json").read_text())["workers"] == 2
    spanning = [j for j in _new_jobs(cluster, before) if j["NodeList"] == "node[1-2]"]
    assert len(spanning) == 1 and spanning[0]["JobState"] == "COMPLETED"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NB2CWL_LOCAL_WORKERS", "2")
        local, local_results = run_with_workflow(notebook, tmp_path / "local", "--no-cache")
    for cells in (nodes, local):  # as the kernel, without TensorFlow's log lines about
        assert cells[1] == kernel[1] and cells[3] == kernel[3]  # the workers' data set
    assert kernel[3] == ["stdout: 2 epochs\n"]
    (reference,) = local_results.glob("training-*")
    for (name, a), (_, b) in zip(_weights(reference / "model.keras"),
                                 _weights(run / "model.keras"), strict=True):
        assert np.allclose(a, b, rtol=1e-4, atol=1e-5), name
    assert not cluster.queued_jobs()


def _devices_run(notebook: Path, tmp_path: Path) -> tuple[dict[int, list[str]], Path]:
    """The same notebook on the local deployment: two replicas in one process."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NB2CWL_CPU_REPLICAS", "2")
        return run_with_workflow(notebook, tmp_path / "devices", "--no-cache")


def test_a_job_asking_for_more_nodes_than_exist_fails_at_once(cluster: TwoNodeCluster,
                                                              tmp_path: Path) -> None:
    notebook = write_notebook(tmp_path / "loop.ipynb", *DETERMINISTIC_LOOP)
    done = subprocess.run(
        [sys.executable, "-m", "nb2cwl", "run", str(notebook), "-o", str(tmp_path / "wf"),
         "--deployment", "slurm", "--resources", "@train=nodes=3", "--deployment-file",
         str(_profile(tmp_path)), "--quiet"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("nb2cwl: error:")]
    assert len(errors) == 1, done.stderr[-3000:]
    assert "Slurm rejected the job" in errors[0] and "sbatch: error:" in errors[0], errors[0]
    assert "Traceback" not in done.stderr
    assert not cluster.queued_jobs()


def _until_gone(cluster: TwoNodeCluster, seconds: float = 30) -> None:
    """Wait for squeue to list no job; fail naming what is left, and its state."""
    end = time.monotonic() + seconds
    while cluster.queued_jobs() and time.monotonic() < end:
        time.sleep(0.5)
    left = subprocess.run(["squeue", "-h", "-o", "%A %T"], env=cluster.env, capture_output=True,
                          text=True, check=False).stdout
    assert not left.strip(), left


def _workers(cluster: TwoNodeCluster) -> list[int]:
    """Training workers on this cluster's nodes (by the flag their launcher sets)."""
    mine = f"SLURM_CONF={cluster.conf}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"NB2CWL_WORKER=1" in environ and mine in environ:
            found.append(int(entry.name) if entry.name.isdigit() else -1)
    return found


def _start_long_training(tmp_path: Path, name: str
                         ) -> tuple[list[str], dict[str, str], subprocess.Popen[str]]:
    """Start `nb2cwl run` of a notebook whose training on both nodes lasts about 10 s, after
    a step of its own that finishes first (the next run reuses it); its command and env. The
    training reads that step's `total`, so it waits for it: on two one-CPU nodes Slurm could
    otherwise start the training first and leave the small step pending until the kill."""
    cells = [DETERMINISTIC_LOOP[0], "total = sum(i * i for i in range(10**6))\nprint(total)",
             *DETERMINISTIC_LOOP[1:-1],
             "import time\nfor epoch in range(30):\n    for xb, yb in dataset:\n"
             "        loss = train_step(xb, yb)\n    time.sleep(0.3)\n"
             "    print(f'epoch {epoch}: loss {float(loss):.4f}')\nprint('total', total)"]
    notebook = write_notebook(tmp_path / f"{name}.ipynb", *cells)
    command = [sys.executable, "-m", "nb2cwl", "run", str(notebook), "-o", str(tmp_path / "wf"),
               "--deployment", "slurm", "--resources", "@train=nodes=2", "--granularity",
               "cell", "--deployment-file", str(_profile(tmp_path))]
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
               NB2CWL_RENDEZVOUS_TIMEOUT="60")
    return command, env, subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True)


def _second_worker(cluster: TwoNodeCluster, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in _workers(cluster):
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            if b"SLURM_PROCID=1" in environ and b"python" in \
                    Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
        time.sleep(0.3)
    raise AssertionError("the second training worker never started")


@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_a_worker_killed_mid_training_names_its_node_and_the_next_run_reuses(
        cluster: TwoNodeCluster, tmp_path: Path) -> None:
    """SIGKILL to the worker on node2: the run fails within seconds with one line naming the
    step, the node and what happened; no job, worker or lock is left; the next run reuses
    the step that had finished and completes."""
    command, env, run = _start_long_training(tmp_path, "long")
    try:
        victim = _second_worker(cluster, 180)
        time.sleep(6)  # training
        os.kill(victim, signal.SIGKILL)
        killed = time.monotonic()
        _, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 1
    assert time.monotonic() - killed < 60  # not the rendezvous timeout, not an hour
    errors = [line for line in err.splitlines() if line.startswith("nb2cwl: error:")]
    assert errors == [f"nb2cwl: error: step {errors[0].split()[3]} failed at long.ipynb, "
                      "cell 5 (In [6]): training worker 1 on node2: Killed; the other workers "
                      "were stopped"], err
    assert "Traceback" not in err
    _until_gone(cluster)  # a failed job stays in squeue, COMPLETING, while slurmd tidies up
    assert not _workers(cluster)
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "cell_1 reused" in again.stdout and "done" in again.stdout, again.stdout


def test_calibrate_measures_a_job_on_the_cluster_and_compiling_uses_it(
        cluster: TwoNodeCluster, tmp_path: Path) -> None:
    """`nb2cwl calibrate --deployment slurm` measures what one more job costs on this cluster
    and how many cores it has (both nodes'), and the partition pass then places boundaries
    with those figures, not the profile's."""
    calibration = tmp_path / "calibration.json"
    env = dict(os.environ, NB2CWL_CALIBRATION=str(calibration))
    profile = str(_profile(tmp_path))
    done = subprocess.run([sys.executable, "-m", "nb2cwl", "calibrate", "--deployment", "slurm",
                           "--deployment-file", profile, "--repeats", "1"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    measured = json.loads(calibration.read_text())["slurm"]
    assert measured["cores"] == 2  # one per node
    assert 0.05 < measured["step_seconds"] < 30  # sbatch, a job's start, squeue's polling
    assert "measured by nb2cwl calibrate" in measured["source"]
    assert not cluster.queued_jobs()
    notebook = write_notebook(tmp_path / "nb.ipynb", "x = 2", "y = x + 1", "print(y)")
    text = subprocess.run([sys.executable, "-m", "nb2cwl", "explain", str(notebook),
                           "--deployment", "slurm", "--deployment-file", profile], env=env,
                          capture_output=True, text=True, check=True).stdout
    assert f"one costs about {measured['step_seconds']:.2g} s" in text
    assert "measured by nb2cwl calibrate" in text


def _processes_on(cluster: TwoNodeCluster, node: str) -> list[int]:
    """Every process in `node`'s network namespace: its slurmd, slurmstepd and tasks."""
    inode = os.stat(f"/run/netns/{cluster.namespace(node)}").st_ino
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "ns" / "net") == f"net:[{inode}]":
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _training_on(cluster: TwoNodeCluster, node: str, timeout: float) -> None:
    """Wait until the training worker on `node` listens on its port (port_base: 20000 + job
    id mod 10000 * 4): TensorFlow is imported and the workers have met."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for job in cluster.queued_jobs():
            port = 20000 + int(job) % 10000 * 4
            with contextlib.suppress(OSError), socket.create_connection(
                    (cluster.address(node), port), timeout=2):
                return
        time.sleep(0.3)
    raise AssertionError(f"no training worker listened on {node}")


def _node_back(cluster: TwoNodeCluster, node: str) -> None:
    """Start `node`'s slurmd again (its old one gone) and wait until Slurm has it idle."""
    index = 2 + NODES.index(node)  # munged, slurmctld, then one slurmd per node
    if cluster.daemons[index].poll() is None:
        return
    cluster.daemons[index] = start_node(cluster, node)
    subprocess.run(["scontrol", "update", f"nodename={node}", "state=resume"], env=cluster.env,
                   capture_output=True, check=False)
    wait_idle(cluster, 120)


@pytest.mark.skipif(not HAS_TF, reason="TensorFlow is not installed")
def test_a_node_lost_mid_training_is_named_and_the_next_run_reuses(
        cluster: TwoNodeCluster, tmp_path: Path) -> None:
    """node2 lost mid-training (its slurmd, slurmstepd and worker all killed, as when a
    machine goes down): the run fails within a minute with one line naming the step and
    node2; once node2 is back, no job or worker is left and the next run reuses the step that
    had finished and completes."""
    command, env, run = _start_long_training(tmp_path, "lost")
    try:
        _training_on(cluster, "node2", 180)
        time.sleep(2)
        for pid in _processes_on(cluster, "node2"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        lost = time.monotonic()
        _, err = run.communicate(timeout=180)
    finally:
        if run.poll() is None:
            run.kill()
        _node_back(cluster, "node2")
    assert run.returncode == 1
    assert time.monotonic() - lost < 60
    errors = [line for line in err.splitlines() if line.startswith("nb2cwl: error:")]
    assert len(errors) == 1 and errors[0].endswith(
        "failed at lost.ipynb, cell 5 (In [6]): training worker 1 on node2: the node stopped "
        "answering (neither its slurmd nor the worker for 15 s: the machine is down or cut "
        "off); the other workers were stopped"), err
    assert "Traceback" not in err
    _until_gone(cluster, 60)
    assert not _workers(cluster)
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "cell_1 reused" in again.stdout and "done" in again.stdout, again.stdout
