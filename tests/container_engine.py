"""A Docker engine for the container-sandbox tests, and a small image for it.

`start_engine()` uses the engine DOCKER_HOST names, else starts Debian's `dockerd` (the
docker.io package scripts/test.sh installs) as root on a private socket: the overlay2
storage driver, or vfs where overlay2 does not start (vfs works on any filesystem, no
overlay or fuse needed), and no iptables rules or bridge (the tests run containers
without network and leave the host's firewall alone). Its data folder lasts between test sessions,
so the image is built once per machine; one session at a time holds it (a lock file).

`test_image()` builds that image without a registry: a root filesystem of the host's
Debian python3 (the interpreter, the libraries it links and its standard library) and
busybox-static (/bin/sh and the usual commands), imported with `docker import`. Its tag
is a hash of what went in and of this file, so a changed host Python or recipe gives a
new image.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0
LOCK_TIMEOUT_S = 600.0
IMAGE_REPOSITORY = "raf-sandbox-test"
DATA_ROOT = Path(os.environ.get("RAF_TEST_DOCKER_ROOT", "/var/tmp/raf-test-docker"))
STORAGE_DRIVERS = ("overlay2", "vfs")
"""Tried in turn: overlay2 starts a container about four times faster; vfs works on any
filesystem (dockerd refuses to start with a driver the kernel or filesystem lacks)."""
DOCKERD_FLAGS = (
    "--iptables=false",
    "--ip6tables=false",
    "--bridge=none",
    "--userland-proxy=false",
    "--log-level=warn",
)
"""No docker0 bridge and no iptables rules: the containers run without network, and a
test run must not change the host's firewall or add an interface (with the defaults,
dockerd does both; it also fails to start where the kernel lacks iptables)."""
PYTHON_LEFT_OUT = ("test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3")
"""Parts of the standard library the image leaves out (large, never used by the tests)."""


class EngineUnavailable(RuntimeError):
    """The engine could not be reached or started; the message says why."""


@dataclass(kw_only=True)
class Engine:
    """A reachable Docker Engine API; `process` is set when the tests started it."""

    address: str
    process: subprocess.Popen[bytes] | None = None
    folder: Path | None = None
    log: Path | None = None
    lock: IO[str] | None = None
    notes: list[str] = field(default_factory=list)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=STOP_TIMEOUT_S)
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
        if self.lock is not None:
            self.lock.close()  # releases the flock
            self.lock = None

    def log_tail(self) -> str:
        if self.log is None:
            return ""
        try:
            return self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return ""


def _ping(address: str) -> str | None:
    """None when the engine at `address` answers, else why not."""
    import docker

    try:
        client = docker.DockerClient(base_url=address, timeout=10)
    except Exception as exc:
        return str(exc)
    try:
        client.ping()
    except Exception as exc:
        return str(exc)
    finally:
        client.close()
    return None


def start_engine() -> Engine:
    """The engine DOCKER_HOST names, or a dockerd started here (see the module's text)."""
    given = os.environ.get("DOCKER_HOST")
    if given:
        refusal = _ping(given)
        if refusal is not None:
            raise EngineUnavailable(f"DOCKER_HOST={given} does not answer: {refusal}")
        return Engine(address=given)
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise EngineUnavailable(
            "dockerd is not installed: install Debian's docker.io (scripts/test.sh does), "
            "or set DOCKER_HOST to a running engine"
        )
    if os.geteuid() != 0:
        raise EngineUnavailable(
            "starting dockerd needs root; run the tests as root (as CI does) or set "
            "DOCKER_HOST to a running engine (Docker or Podman's Docker-compatible socket)"
        )
    DATA_ROOT.mkdir(mode=0o700, parents=True, exist_ok=True)
    lock = (DATA_ROOT / "lock").open("w")
    deadline = time.monotonic() + LOCK_TIMEOUT_S
    while True:  # one test session at a time uses the data folder
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                lock.close()
                raise EngineUnavailable(
                    f"another test session holds {DATA_ROOT}/lock for over {LOCK_TIMEOUT_S:.0f}s"
                ) from None
            time.sleep(0.5)
    failures: list[str] = []
    for driver in STORAGE_DRIVERS:
        try:
            engine = _launch(dockerd, driver)
        except EngineUnavailable as exc:
            failures.append(f"--storage-driver={driver}: {exc}")
            continue
        engine.lock = lock
        if failures:
            engine.notes.append("; ".join(failures))
        return engine
    lock.close()
    raise EngineUnavailable("\n\n".join(failures))


def _launch(dockerd: str, driver: str) -> Engine:
    """dockerd with the `driver` storage driver, answering on a private socket."""
    folder = Path(tempfile.mkdtemp(prefix="raf-dockerd-", dir="/tmp"))  # short socket paths
    socket_path = folder / "docker.sock"
    log = folder / "dockerd.log"
    argv = [
        dockerd,
        f"--data-root={DATA_ROOT / driver}",
        f"--exec-root={folder / 'exec'}",
        f"--pidfile={folder / 'dockerd.pid'}",
        f"--host=unix://{socket_path}",
        f"--storage-driver={driver}",
        *DOCKERD_FLAGS,
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    engine = Engine(address=f"unix://{socket_path}", process=process, folder=folder, log=log)
    started = time.monotonic()
    problem: str | None = "not started"
    while time.monotonic() - started < START_TIMEOUT_S:
        if process.poll() is not None:
            tail = engine.log_tail()
            engine.stop()
            raise EngineUnavailable(f"dockerd exited at start (code {process.returncode}):\n{tail}")
        if socket_path.exists():
            problem = _ping(engine.address)
            if problem is None:
                took = time.monotonic() - started
                engine.notes.append(f"dockerd ({driver}) started in {took:.1f}s")
                _remove_containers(engine.address)  # left by a session that was killed
                return engine
        time.sleep(0.1)
    tail = engine.log_tail()
    engine.stop()
    raise EngineUnavailable(
        f"dockerd did not answer in {START_TIMEOUT_S:.0f}s ({problem}):\n{tail}"
    )


# -- the image ----------------------------------------------------------------------------


def _libraries(binaries: list[Path]) -> set[Path]:
    """The shared libraries `binaries` load (ldd), as the paths the loader opens."""
    found: set[Path] = set()
    for chunk in range(0, len(binaries), 50):
        done = subprocess.run(
            ["ldd", *map(str, binaries[chunk : chunk + 50])],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        for line in done.stdout.splitlines():
            parts = line.split()
            if line.endswith(":"):
                continue  # the name of the binary that follows
            if "=>" in parts:
                target = parts[parts.index("=>") + 1]
                if target.startswith("/"):
                    found.add(Path(target))
            elif parts and parts[0].startswith("/"):
                found.add(Path(parts[0]))  # the loader itself
    return found


def _sources() -> tuple[Path, Path, list[Path], Path]:
    """The interpreter, its standard library folder, the libraries, busybox."""
    python = Path(os.path.realpath("/usr/bin/python3"))
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    stdlib = Path("/usr/lib") / python.name
    if not python.is_file() or not stdlib.is_dir():
        raise EngineUnavailable(
            f"the image needs Debian's python3 (/usr/bin/python3, /usr/lib/{version})"
        )
    busybox = Path("/bin/busybox")
    if not busybox.is_file():
        raise EngineUnavailable("the image needs busybox-static (scripts/test.sh installs it)")
    dynload = sorted((stdlib / "lib-dynload").glob("*.so"))
    libs = sorted(_libraries([python, *dynload]))
    return python, stdlib, libs, busybox


def _stdlib_files(stdlib: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(stdlib):
        here = Path(dirpath)
        if here == stdlib:
            dirnames[:] = [d for d in dirnames if d not in PYTHON_LEFT_OUT]
        dirnames[:] = [d for d in dirnames if d not in ("__pycache__", "site-packages")]
        dirnames.sort()
        for name in sorted(filenames):
            yield here / name


def image_tag() -> tuple[str, list[tuple[Path, Path]], dict[Path, Path]]:
    """The image's tag (a hash of its inputs), its (host path, image path) file pairs and
    its symbolic links (the paths the loader opens, to the files)."""
    python, stdlib, libs, busybox = _sources()
    files: list[tuple[Path, Path]] = [(python, Path("/usr/bin") / python.name)]
    links: dict[Path, Path] = {}
    for lib in libs:
        real = Path(os.path.realpath(lib))
        files.append((real, real))
        opened = Path(os.path.realpath(lib.parent)) / lib.name
        if opened != real:
            links[opened] = real
    files += [(f, f) for f in _stdlib_files(stdlib)]
    files.append((busybox, Path("/usr/bin/busybox")))
    digest = hashlib.sha256(Path(__file__).read_bytes())  # the recipe is part of the tag
    for source, target in files:
        st = source.stat()
        digest.update(f"{source}\0{target}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return f"{IMAGE_REPOSITORY}:{digest.hexdigest()[:16]}", sorted(set(files)), links


def _add_bytes(tar: tarfile.TarFile, path: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(path.lstrip("/"))
    info.size = len(data)
    info.mode = mode
    tar.addfile(info, io.BytesIO(data))


def _add_dir(tar: tarfile.TarFile, path: str, mode: int = 0o755) -> None:
    info = tarfile.TarInfo(path.lstrip("/"))
    info.type = tarfile.DIRTYPE
    info.mode = mode
    tar.addfile(info)


def _add_link(tar: tarfile.TarFile, path: str, target: str) -> None:
    info = tarfile.TarInfo(path.lstrip("/"))
    info.type = tarfile.SYMTYPE
    info.linkname = target
    tar.addfile(info)


def write_rootfs(files: list[tuple[Path, Path]], links: dict[Path, Path], out: Path) -> None:
    """The image's root filesystem as a tar at `out`."""
    applets = subprocess.run(
        ["/bin/busybox", "--list"], capture_output=True, text=True, timeout=30, check=True
    ).stdout.split()
    with tarfile.open(out, "w") as tar:
        folders: set[str] = set()

        def parents(path: Path) -> None:
            for parent in reversed(path.parents[:-1]):
                key = str(parent)
                if key not in folders:
                    folders.add(key)
                    _add_dir(tar, key)

        for top in ("usr", "usr/bin", "usr/lib", "usr/lib64", "usr/sbin"):
            folders.add("/" + top)
            _add_dir(tar, top)
        for name in ("bin", "sbin", "lib", "lib64"):  # Debian's merged /usr
            _add_link(tar, name, f"usr/{name}")
        modes = {"tmp": 0o1777, "work": 0o755, "proc": 0o555, "sys": 0o555, "dev": 0o755,
                 "run": 0o755, "etc": 0o755, "home": 0o755}  # fmt: skip
        for name, mode in modes.items():
            folders.add("/" + name)
            _add_dir(tar, name, mode)
        _add_bytes(
            tar, "etc/passwd",
            b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n",
        )  # fmt: skip
        _add_bytes(tar, "etc/group", b"root:x:0:\nnogroup:x:65534:\n")
        for source, target in files:
            parents(target)
            info = tar.gettarinfo(str(source), arcname=str(target).lstrip("/"))
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            with source.open("rb") as handle:
                tar.addfile(info, handle)
        for link, target in sorted(links.items()):
            parents(link)
            _add_link(tar, str(link), str(target))
        python_name = next(t.name for _, t in files if t.name.startswith("python3"))
        _add_link(tar, "usr/bin/python3", python_name)
        for applet in applets:
            if applet not in ("python3", "busybox"):
                _add_link(tar, f"usr/bin/{applet}", "busybox")


def build_image(address: str) -> tuple[str, float]:
    """The test image on the engine at `address` (built when missing) and the seconds
    it took (0 when it was there)."""
    import docker

    tag, files, links = image_tag()
    client = docker.DockerClient(base_url=address, timeout=300)
    try:
        with contextlib.suppress(docker.errors.ImageNotFound):
            client.images.get(tag)
            return tag, 0.0
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="raf-rootfs-") as folder:
            tar = Path(folder) / "rootfs.tar"
            write_rootfs(files, links, tar)
            repository, _, version = tag.partition(":")
            answer = client.api.import_image_from_file(str(tar), repository=repository, tag=version)
        try:
            client.images.get(tag)
        except docker.errors.ImageNotFound:  # Podman's import names it `latest`
            found = re.search(r"sha256:[0-9a-f]{64}", str(answer))
            if found is None:
                raise
            client.api.tag(found.group(0), repository, version)
            client.images.get(tag)
        for image in client.images.list(name=repository):  # earlier recipes' images
            if tag not in image.tags:
                with contextlib.suppress(docker.errors.APIError):
                    client.images.remove(image.id, force=True)
        return tag, time.monotonic() - started
    finally:
        client.close()


def leftover_containers(address: str) -> list[Any]:
    """Containers this process's raf started that the engine still has (running or not)."""
    import docker

    client = docker.DockerClient(base_url=address, timeout=30)
    try:
        mine = f"raf.sandbox={os.getpid()}"
        return list(client.containers.list(all=True, filters={"label": mine}))
    finally:
        client.close()


def _remove_containers(address: str) -> None:
    """Remove every container raf started on the tests' own engine."""
    import docker

    client = docker.DockerClient(base_url=address, timeout=60)
    try:
        for container in client.containers.list(all=True, filters={"label": "raf.sandbox"}):
            with contextlib.suppress(docker.errors.NotFound):
                container.remove(force=True)
    finally:
        client.close()
