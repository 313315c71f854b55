"""A real Docker engine on a private socket, and the slim step image built without a registry.

Debian's docker.io (plus iptables and debootstrap) is installed when missing. dockerd runs with
its own socket, data root, exec root and pid file under a temporary directory, without
iptables or a bridge, and is stopped by its pid at the end of the session.

No registry is reachable, so nothing is pulled. The base image is a Debian root file system
made with `debootstrap --variant=minbase --include=python3` from the archive apt already uses,
with this environment's cloudpickle copied in (the step runtime's one dependency, the same
version on both sides of a pickle) and a marker file /etc/nb2cwl-image. It is piped into
`docker import`; containers/Dockerfile.cpu is then built on top of it with PACKAGES="" (no
network in the build). The root file system is cached as a tarball, keyed by a hash of the
recipe, under $NB2CWL_TEST_CACHE (default ~/.cache/nb2cwl-tests), so later sessions on the same
machine only import and build (seconds).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import cloudpickle
import pytest

from engines import (
    EngineError,
    apt_install,
    engine_unavailable,
    run,
    start_daemon,
    stop_daemon,
    wait_for,
)

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "containers" / "Dockerfile.cpu"
PACKAGES = ("docker.io", "iptables", "debootstrap")
BINARIES = ("dockerd", "docker", "debootstrap")
ROOTFS_PACKAGES = "python3"
ROOTFS_TIMEOUT = 420  # debootstrap takes about a minute on a 2-core machine
TRIM = ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man",
        "usr/share/locale", "usr/share/info")


@dataclass
class DockerEngine:
    """A running private Docker engine and the step image it holds."""

    host: str  # DOCKER_HOST value
    image: str  # containers/Dockerfile.cpu built on the local root file system
    marker: str  # the content of /etc/nb2cwl-image in that image

    def docker(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run the docker client against this engine."""
        return run(["docker", *args], timeout=timeout, env={**os.environ, "DOCKER_HOST": self.host})

    def containers_left(self, within: float = 15) -> str:
        """`docker ps -a` of the containers still on the engine after waiting up to `within`
        seconds for none ("" then). StreamFlow stops a run's containers at its end, and
        dockerd removes a stopped `--rm` container just after, not at once."""
        deadline = time.monotonic() + within
        while self.docker("ps", "-aq").stdout.strip():
            if time.monotonic() > deadline:
                return self.docker("ps", "-a").stdout
            time.sleep(0.5)
        return ""


def _cache_dir() -> Path:
    path = Path(os.environ.get("NB2CWL_TEST_CACHE") or Path.home() / ".cache" / "nb2cwl-tests")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _debian_archive() -> tuple[str, str]:
    """(suite, archive URI) of this machine's Debian release, from apt's own sources."""
    release = Path("/etc/os-release")
    fields = dict(line.split("=", 1) for line in release.read_text().splitlines()
                  if "=" in line) if release.exists() else {}
    suite = fields.get("VERSION_CODENAME", "").strip('"')
    if fields.get("ID", "").strip('"') != "debian" or not suite:
        raise EngineError("not a Debian machine: cannot debootstrap the step image")
    sources = Path("/etc/apt/sources.list.d")
    for deb822 in sorted(sources.glob("*.sources")) if sources.is_dir() else []:
        for paragraph in re.split(r"\n\s*\n", deb822.read_text()):
            entry = {}
            for line in paragraph.splitlines():
                if ":" in line and not line.startswith(("#", " ")):
                    key, value = line.split(":", 1)
                    entry[key.strip().lower()] = value.split()
            if "deb" in entry.get("types", []) and suite in entry.get("suites", []) \
                    and entry.get("uris"):
                return suite, entry["uris"][0]
    lists = [Path("/etc/apt/sources.list"), *sorted(sources.glob("*.list"))]
    for source in (p for p in lists if p.is_file()):
        for line in source.read_text().splitlines():
            words = re.sub(r"\[[^]]*\]", "", line).split()
            if len(words) >= 3 and words[0] == "deb" and words[2] == suite:
                return suite, words[1]
    raise EngineError(f"no apt source for Debian {suite}: cannot debootstrap the step image")


def _recipe() -> tuple[str, str]:
    """(hash, marker) of everything the image is made from."""
    suite, _ = _debian_archive()
    version = importlib.metadata.version("cloudpickle")
    recipe = "\n".join([suite, ROOTFS_PACKAGES, " ".join(TRIM), f"cloudpickle {version}",
                        DOCKERFILE.read_text()])
    digest = hashlib.sha256(recipe.encode()).hexdigest()[:16]
    return digest, f"nb2cwl test image {digest}"


def _rootfs_tarball(digest: str, marker: str) -> Path:
    """The root file system as a tarball, built once per recipe (debootstrap, about 60 s)."""
    tarball = _cache_dir() / f"rootfs-{digest}.tar"
    if tarball.exists():
        return tarball
    suite, archive = _debian_archive()
    work = Path(tempfile.mkdtemp(prefix="rootfs-", dir=_cache_dir()))
    try:
        rootfs = work / "rootfs"
        run(["debootstrap", "--variant=minbase", f"--include={ROOTFS_PACKAGES}", suite,
             str(rootfs), archive], timeout=ROOTFS_TIMEOUT)
        for sub in TRIM:
            shutil.rmtree(rootfs / sub, ignore_errors=True)
        site = rootfs / "usr" / "lib" / "python3" / "dist-packages"
        package = Path(cloudpickle.__file__).parent
        shutil.copytree(package, site / "cloudpickle",
                        ignore=shutil.ignore_patterns("__pycache__"))
        (rootfs / "etc" / "nb2cwl-image").write_text(marker + "\n")
        partial = work / "rootfs.tar"
        run(["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(partial), "."],
            timeout=300)
        os.replace(partial, tarball)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for stale in _cache_dir().glob("rootfs-*.tar"):
        if stale != tarball:
            stale.unlink()
    return tarball


def _start_dockerd(state: Path) -> tuple[subprocess.Popen[bytes], str]:
    host = f"unix://{state / 'docker.sock'}"
    process = start_daemon(
        ["dockerd", f"--data-root={state / 'data'}", f"--exec-root={state / 'exec'}",
         f"--pidfile={state / 'docker.pid'}", f"--host={host}", "--iptables=false",
         "--bridge=none"], state / "dockerd.log")
    env = {**os.environ, "DOCKER_HOST": host}

    def ready() -> bool:
        if process.poll() is not None:
            raise EngineError("dockerd exited: "
                              + (state / "dockerd.log").read_text()[-1200:])
        return run(["docker", "info"], env=env, check=False, timeout=20).returncode == 0

    try:
        wait_for(ready, 60, "dockerd answering")
    except EngineError:
        _stop_dockerd(process)
        raise
    return process, host


def _stop_dockerd(process: subprocess.Popen[bytes]) -> None:
    stop_daemon(process, grace=30)


def start_engine(state: Path) -> tuple[subprocess.Popen[bytes], DockerEngine]:
    """Install if needed, make the image's root file system, start dockerd, build the image."""
    apt_install(PACKAGES, BINARIES)
    digest, marker = _recipe()
    tarball = _rootfs_tarball(digest, marker)
    process, host = _start_dockerd(state)
    engine = DockerEngine(host, f"nb2cwl-step:test-{digest}", marker)
    try:
        base = f"nb2cwl-test-base:{digest}"
        engine.docker("import", "--change", 'CMD ["/bin/sh"]', str(tarball), base, timeout=300)
        run(["docker", "build", "--network=none", "--build-arg", f"BASE={base}",
             "--build-arg", "PACKAGES=", "-t", engine.image, "-f", str(DOCKERFILE),
             str(DOCKERFILE.parent)], timeout=300,
            env={**os.environ, "DOCKER_HOST": host, "DOCKER_BUILDKIT": "0"})
    except EngineError:
        _stop_dockerd(process)
        raise
    return process, engine


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[DockerEngine]:
    """A private Docker engine for the session; DOCKER_HOST is exported while it runs."""
    state = Path(tempfile.mkdtemp(prefix="nb2cwl-docker-"))  # short: socket paths are limited
    try:
        process, engine = start_engine(state)
    except (EngineError, OSError) as exc:
        shutil.rmtree(state, ignore_errors=True)
        engine_unavailable(f"no Docker engine: {exc}")
    previous = os.environ.get("DOCKER_HOST")
    os.environ["DOCKER_HOST"] = engine.host
    try:
        yield engine
    finally:
        if previous is None:
            os.environ.pop("DOCKER_HOST", None)
        else:
            os.environ["DOCKER_HOST"] = previous
        leftover = engine.docker("ps", "-aq").stdout.split()
        if leftover:  # containers of this private engine only
            engine.docker("rm", "-f", *leftover)
        _stop_dockerd(process)
        shutil.rmtree(state, ignore_errors=True)
