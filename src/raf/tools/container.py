"""The container backend: one call of `code_interpreter` or `run_command` runs in a fresh
container on a Docker Engine API (through the official `docker` SDK, the `sandbox` extra,
imported when a container is first used), which is killed and removed when the call
ends, times out or is cancelled."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raf.core.errors import MissingExtraError, ToolExecutionError
from raf.tools.sandbox import (
    KILL_GRACE_S,
    NOBODY_USER,
    ContainerSandbox,
    OutputSink,
    ProcessOutcome,
)

logger = logging.getLogger("raf.tools.container")

LABEL = "raf.sandbox"
"""Label on every container raf starts (its value: the starting process's id)."""
STDIN_MOUNT = "/run/raf-stdin"
"""Where the bytes given as standard input are mounted (read-only) in the container."""
STDIN_FILE = "stdin"
REMOVE_TIMEOUT_S = 30.0
"""How long removing a container may take before raf gives up (and logs it)."""


class ContainerEngineError(ToolExecutionError):
    """No container engine answers, or it cannot run the sandbox's image."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Bind:
    """A host path shown in the container at the same path (or at `target`)."""

    source: Path
    target: str
    read_only: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class Hidden:
    """An empty, read-only folder over `target` (hides what lies below it). It is a bind
    mount of an empty host folder, not a tmpfs: Podman mounts a tmpfs before the binds
    around it, so a tmpfs inside the workspace's bind would be covered by it."""

    target: str


MountSpec = Bind | Hidden


def unreachable_message(address: str, reason: object) -> str:
    """What to do when no engine answers at `address`."""
    return (
        f"no container engine answers at {address} ({reason}). Start Docker (dockerd), or "
        "point raf at another Docker Engine API: ContainerSandbox(docker_host=...) in "
        "Python, `dockerHost:` in a declaration, or the DOCKER_HOST environment variable. "
        "Podman serves the same API on its Docker-compatible socket: "
        "`systemctl --user start podman.socket`, then "
        "docker_host='unix:///run/user/<uid>/podman/podman.sock'"
    )


def mounts_from_bwrap(args: Sequence[str], *, under: Path) -> list[MountSpec]:
    """The bubblewrap mounts (`--tmpfs P`, `--bind P P`, `--ro-bind S P`, with `--size`)
    that enforce path rules, as container mounts (a tmpfs becomes a Hidden folder);
    those outside `under` (the only host folder the container sees) are left out. A later
    mount of a path replaces an earlier one, as in bubblewrap."""
    out: dict[str, MountSpec] = {}
    i = 0
    while i < len(args):
        flag = args[i]
        if flag == "--size":
            i += 2
            continue
        if flag == "--tmpfs":
            target = args[i + 1]
            spec: MountSpec = Hidden(target=target)
            i += 2
        elif flag in ("--bind", "--ro-bind"):
            source, target = args[i + 1], args[i + 2]
            spec = Bind(source=Path(source), target=target, read_only=flag == "--ro-bind")
            i += 3
        else:
            raise ValueError(f"mount flag {flag!r} has no container equivalent")
        if Path(target) == under or under in Path(target).parents:
            out.pop(target, None)
            out[target] = spec
    return list(out.values())


def default_user(folder: Path) -> str:
    """The owner of `folder` as "uid:gid", or `nobody` when root owns it: files the
    container writes then belong to the folder's owner, and it never runs as root."""
    st = os.stat(folder)
    if st.st_uid == 0:
        return NOBODY_USER
    return f"{st.st_uid}:{st.st_gid}"


def _docker() -> Any:
    """The docker SDK, or the error naming the `sandbox` extra."""
    try:
        import docker
        import docker.errors
        import docker.types
        import requests.exceptions  # noqa: F401  (docker's HTTP client, raised through it)
    except ImportError as exc:
        raise MissingExtraError(
            "the container sandbox", "sandbox", getattr(exc, "name", None)
        ) from exc
    return docker


class ContainerRunner:
    """Runs commands in containers of one `ContainerSandbox`; holds one engine client,
    opened at the first call and closed by `close()`."""

    def __init__(self, sandbox: ContainerSandbox) -> None:
        self.sandbox = sandbox
        self._client: Any = None
        self._lock = threading.Lock()
        self._empty: Path | None = None

    def _empty_folder(self) -> Path:
        """An empty folder of raf's that Hidden mounts show (made once, removed by close)."""
        with self._lock:
            if self._empty is None or not self._empty.is_dir():
                self._empty = Path(tempfile.mkdtemp(prefix="raf-empty-"))
                self._empty.chmod(0o555)
            return self._empty

    def client(self) -> Any:
        """The engine's `docker.DockerClient` (connected and pinged once), or
        ContainerEngineError."""
        docker = _docker()
        import requests.exceptions

        with self._lock:
            if self._client is not None:
                return self._client
            address = self.sandbox.engine_address()
            try:
                client = docker.DockerClient(
                    base_url=address, timeout=int(max(1, self.sandbox.api_timeout_s))
                )
            except docker.errors.DockerException as exc:
                raise ContainerEngineError(unreachable_message(address, exc)) from exc
            try:
                client.ping()
            except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
                client.close()
                raise ContainerEngineError(unreachable_message(address, _reason(exc))) from exc
            self._client = client
            return client

    def close(self) -> None:
        """Close the engine client (containers are removed call by call)."""
        with self._lock:
            client, self._client = self._client, None
            empty, self._empty = self._empty, None
        if client is not None:
            client.close()
        if empty is not None:
            with contextlib.suppress(OSError):
                empty.rmdir()

    async def run(
        self,
        argv: Sequence[str],
        *,
        mounts: Sequence[MountSpec],
        cwd: str,
        env: Mapping[str, str],
        user: str,
        network: bool,
        timeout_s: float,
        output_cap: int,
        stdin: Path | None = None,
        file_bytes: int | None = None,
        cpu_s: int | None = None,
    ) -> ProcessOutcome:
        """Run `argv` in a new container and remove it; on timeout or cancellation it is
        killed first. stdout and stderr are each kept up to `output_cap` bytes. `stdin`:
        a host folder holding the file STDIN_FILE, read as the command's standard input;
        `file_bytes` and `cpu_s`: limits on each file written and on CPU seconds."""
        client = await asyncio.to_thread(self.client)
        creating = asyncio.ensure_future(
            asyncio.to_thread(
                self._create,
                client,
                argv,
                mounts,
                cwd,
                env,
                user,
                network,
                stdin,
                file_bytes,
                cpu_s,
            )
        )
        try:
            container = await asyncio.shield(creating)
        except asyncio.CancelledError:
            # cancelled while the engine creates it: wait for it, then remove it
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self._remove, await creating)
            raise
        try:
            return await asyncio.to_thread(self._run, container, timeout_s, output_cap)
        finally:
            # shielded: a cancelled call still kills and removes its container
            await asyncio.shield(asyncio.to_thread(self._remove, container))

    def _create(
        self,
        client: Any,
        argv: Sequence[str],
        mounts: Sequence[MountSpec],
        cwd: str,
        env: Mapping[str, str],
        user: str,
        network: bool,
        stdin: Path | None,
        file_bytes: int | None,
        cpu_s: int | None,
    ) -> Any:
        docker = _docker()
        import requests.exceptions
        from docker.types import LogConfig, Mount, Ulimit

        box = self.sandbox
        command = list(argv)
        engine_mounts = [_engine_mount(m, self._empty_folder) for m in mounts]
        if stdin is not None:
            engine_mounts.append(
                Mount(target=STDIN_MOUNT, source=str(stdin), type="bind", read_only=True)
            )
            command = ["/bin/sh", "-c", f'exec "$@" < {STDIN_MOUNT}/{STDIN_FILE}', "sh", *command]
        engine_mounts.append(
            Mount(
                target="/tmp",
                source=None,
                type="tmpfs",
                tmpfs_size=box.tmpfs_mb << 20,
                tmpfs_mode=0o1777,
            )
        )
        ulimits = [Ulimit(name="core", soft=0, hard=0), Ulimit(name="nofile", soft=1024, hard=1024)]
        if file_bytes is not None:
            ulimits.append(Ulimit(name="fsize", soft=file_bytes, hard=file_bytes))
        if cpu_s is not None:
            ulimits.append(Ulimit(name="cpu", soft=cpu_s, hard=cpu_s))
        memory = box.memory_mb << 20
        try:
            return client.containers.create(
                box.image,
                command=command,
                user=user,
                working_dir=cwd,
                environment=dict(env),
                network_mode="bridge" if network and box.network else "none",
                read_only=box.read_only,
                mounts=engine_mounts,
                mem_limit=memory,
                memswap_limit=memory,
                nano_cpus=int(box.cpus * 1e9),
                pids_limit=box.pids,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                ulimits=ulimits,
                log_config=LogConfig(type="none"),
                labels={LABEL: str(os.getpid())},
                stdin_open=False,
                tty=False,
                detach=True,
            )
        except docker.errors.ImageNotFound as exc:
            raise ContainerEngineError(
                f"image {box.image!r} is not on the engine at {box.engine_address()}: raf "
                f"never pulls one; pull or build it first (docker pull {box.image})"
            ) from exc
        except docker.errors.APIError as exc:
            raise ContainerEngineError(
                f"the engine at {box.engine_address()} could not create a container of "
                f"{box.image!r}: {exc.explanation or exc}"
            ) from exc
        except requests.exceptions.RequestException as exc:
            raise ContainerEngineError(
                unreachable_message(box.engine_address(), _reason(exc))
            ) from exc

    def _run(self, container: Any, timeout_s: float, output_cap: int) -> ProcessOutcome:
        docker = _docker()
        import requests.exceptions

        out, err = OutputSink(output_cap), OutputSink(output_cap)
        try:
            stream = container.attach(stdout=True, stderr=True, stream=True, demux=True, logs=False)
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise ContainerEngineError(
                f"the engine at {self.sandbox.engine_address()} failed to attach to the "
                f"container: {_reason(exc)}"
            ) from exc
        reader = threading.Thread(target=_drain, args=(stream, out, err), daemon=True)
        reader.start()
        notes: list[str] = []
        timed_out = False
        code: int | None = None
        try:
            try:
                container.start()
            except requests.exceptions.RequestException as exc:
                raise ContainerEngineError(
                    unreachable_message(self.sandbox.engine_address(), _reason(exc))
                ) from exc
            begun = time.monotonic()
            try:
                code = int(container.wait(timeout=timeout_s)["StatusCode"])
            except requests.exceptions.RequestException as exc:
                self._kill(container)
                if time.monotonic() - begun < 0.9 * timeout_s:  # the engine went away
                    raise ContainerEngineError(
                        unreachable_message(self.sandbox.engine_address(), _reason(exc))
                    ) from exc
                timed_out = True  # the wait's read timed out
        except docker.errors.APIError as exc:
            raise ContainerEngineError(
                f"the container of {self.sandbox.image!r} failed to start: {exc.explanation or exc}"
            ) from exc
        finally:
            reader.join(KILL_GRACE_S)
            with contextlib.suppress(Exception):
                stream.close()
        if not timed_out:
            with contextlib.suppress(docker.errors.DockerException):
                container.reload()
                if container.attrs.get("State", {}).get("OOMKilled"):
                    notes.append(f"memory limit of {self.sandbox.memory_mb} MB reached")
            if code == 137 and not notes:  # an engine that does not report OOMKilled
                notes.append(
                    f"killed by SIGKILL, as the kernel does at the memory limit of "
                    f"{self.sandbox.memory_mb} MB"
                )
        return ProcessOutcome(
            exit_code=code,
            stdout=bytes(out.kept),
            stderr=bytes(err.kept),
            timed_out=timed_out,
            stdout_dropped=out.dropped,
            stderr_dropped=err.dropped,
            signal="SIGKILL" if timed_out or code == 137 else None,
            notes=notes,
        )

    @staticmethod
    def _kill(container: Any) -> None:
        docker = _docker()
        with contextlib.suppress(docker.errors.DockerException):
            container.kill()

    @staticmethod
    def _remove(container: Any) -> None:
        """Kill and remove the container, and wait (up to REMOVE_TIMEOUT_S) until the
        engine no longer has it: a removal already under way answers 409 first."""
        docker = _docker()
        import requests.exceptions

        deadline = time.monotonic() + REMOVE_TIMEOUT_S
        problem: Exception | None = None
        while time.monotonic() < deadline:
            try:
                container.remove(force=True)
            except docker.errors.NotFound:
                return
            except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
                problem = exc
            try:
                container.reload()
            except docker.errors.NotFound:
                return
            except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
                problem = exc
            time.sleep(0.2)
        logger.warning("container %s was not removed: %s", container.id[:12], problem)


def _drain(stream: Any, out: OutputSink, err: OutputSink) -> None:
    with contextlib.suppress(Exception):  # the stream ends with an error when removed
        for stdout, stderr in stream:
            if stdout:
                out.add(stdout)
            if stderr:
                err.add(stderr)


def _engine_mount(spec: MountSpec, empty: Callable[[], Path]) -> Any:
    from docker.types import Mount

    if isinstance(spec, Hidden):
        return Mount(target=spec.target, source=str(empty()), type="bind", read_only=True)
    return Mount(target=spec.target, source=str(spec.source), type="bind", read_only=spec.read_only)


def _reason(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) < 300 else text[:300] + "…"
