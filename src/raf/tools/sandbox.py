"""OS sandboxes for commands and code: bubblewrap where it works, `unshare -n` for no
network otherwise, plus rlimits, a scrubbed environment and process-group kills."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from raf.core.errors import ConfigurationError

logger = logging.getLogger("raf.tools.sandbox")

PROBE_TIMEOUT_S = 10.0
KILL_GRACE_S = 3.0
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
"""The toolchain a sandboxed command sees (read-only); nothing else of the host's / is shown."""
HIDDEN_SYSTEM_FILES = (
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers",
    "/etc/security/opasswd", "/etc/machine-id",
)  # fmt: skip
"""Secrets under /etc replaced by an empty file in the sandbox."""
HIDDEN_SYSTEM_FOLDERS = ("/etc/ssh", "/etc/sudoers.d", "/etc/ssl/private", "/etc/credstore")
"""Folders under /etc that hold keys (ssh host keys, TLS keys): replaced by empty folders."""
TMP_BYTES = 256 * 1024 * 1024
"""Size of the private /tmp and /dev/shm of a sandbox (RAM-backed, so capped)."""
SAFE_ENVIRONMENT = (
    "PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME", "SHELL", "TMPDIR",
    "COLUMNS", "LINES", "NO_COLOR", "PWD",
)  # fmt: skip
"""The variables a command inherits by default (with every LC_*): never secrets."""

_SECRET = re.compile(
    r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|PRIVATE|COOKIE|SESSION|_PAT|AUTH"
    r"|_DSN$)",
    re.IGNORECASE,
)
_URL_WITH_PASSWORD = re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@", re.IGNORECASE)
"""A value such as postgres://user:pass@host (DATABASE_URL): a secret whatever its name."""

_PROBE_BWRAP = (
    "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-net",
    "--cap-drop", "ALL", "--new-session", "--", "true",
)  # fmt: skip


DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"
"""The Docker Engine API socket tried when neither `docker_host` nor DOCKER_HOST is set."""
NOBODY_USER = "65534:65534"
"""The container user when the mounted folder belongs to root: `nobody`."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ContainerSandbox:
    """The container backend of `code_interpreter` and `run_command`: each call runs in a
    fresh container of `image` on a Docker Engine API (Docker, or Podman's
    Docker-compatible socket), removed when the call ends or times out.

    The container has no network unless `network` is True *and* the tool gives the call
    the network; its root filesystem is read-only (`read_only`), /tmp is a `tmpfs_mb` MiB
    tmpfs, every capability is dropped, it cannot gain privileges, and it runs as a
    non-root `user` (by default the owner of the mounted folder, or `nobody` when that is
    root) under `memory_mb`, `cpus` and `pids` limits. `docker_host` names the engine
    (`unix:///run/user/1000/podman/podman.sock`, `tcp://…`); None means DOCKER_HOST, else
    DEFAULT_DOCKER_HOST. `python` is the interpreter code_interpreter runs in the image.
    The image must exist on the engine (raf never pulls one) and have /bin/sh."""

    image: str
    memory_mb: int = 512
    cpus: float = 1.0
    pids: int = 128
    network: bool = False
    read_only: bool = True
    tmpfs_mb: int = 64
    user: str | None = None
    docker_host: str | None = None
    python: str = "python3"
    api_timeout_s: float = 60.0

    def __post_init__(self) -> None:
        def bad(what: str) -> ConfigurationError:
            return ConfigurationError(f"ContainerSandbox: {what}")

        if not isinstance(self.image, str) or not self.image.strip():
            raise bad(f"image must name an image on the engine, not {self.image!r}")
        for key, least in (("memory_mb", 6), ("pids", 1), ("tmpfs_mb", 1)):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise bad(f"{key} must be a whole number of at least {least}, not {value!r}")
        if isinstance(self.cpus, bool) or not isinstance(self.cpus, int | float):
            raise bad(f"cpus must be a number such as 1 or 0.5, not {self.cpus!r}")
        if not 0 < self.cpus <= 1024:
            raise bad(f"cpus must be above 0 (and at most 1024), not {self.cpus!r}")
        if self.api_timeout_s <= 0:
            raise bad(f"api_timeout_s must be positive, not {self.api_timeout_s!r}")
        if self.user is not None and is_root_user(self.user):
            raise bad(
                f"user {self.user!r} is root: the container runs as a non-root user (leave "
                "user unset for the mounted folder's owner, or give 'uid:gid' above 0)"
            )

    def engine_address(self) -> str:
        """The Docker Engine API address this sandbox talks to."""
        return self.docker_host or os.environ.get("DOCKER_HOST") or DEFAULT_DOCKER_HOST


CONTAINER_ENVIRONMENT = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
}
"""The environment a container starts with (the host's PATH and HOME mean nothing there)."""


def is_root_user(user: str) -> bool:
    """True when a container `user` ("name", "uid" or "uid:gid") means root."""
    name = user.strip().split(":", 1)[0].strip()
    return name in ("", "root") or (name.isdigit() and int(name) == 0)


class SandboxKind(StrEnum):
    """What isolation is available on this machine."""

    BWRAP = "bubblewrap"
    UNSHARE = "unshare"
    NONE = "none"


def scrub_environment(
    env: Mapping[str, str] | None = None, *, allow: Iterable[str] = ()
) -> dict[str, str]:
    """The environment without variables that look like secrets (API keys, tokens,
    passwords…, or a URL carrying a password); names in `allow` are kept."""
    source = dict(os.environ if env is None else env)
    keep = set(allow)
    return {
        k: v
        for k, v in source.items()
        if k in keep or not (_SECRET.search(k) or _URL_WITH_PASSWORD.search(v))
    }


def allowed_environment(
    env: Mapping[str, str] | None = None, *, allow: Iterable[str] = ()
) -> dict[str, str]:
    """Only SAFE_ENVIRONMENT, the LC_* locale variables and the names in `allow`: an
    allow-list, because no pattern can tell every secret's name (MYSQL_PWD, CI_JOB_JWT…)."""
    source = dict(os.environ if env is None else env)
    keep = {*SAFE_ENVIRONMENT, *allow}
    return {k: v for k, v in source.items() if k in keep or k.startswith("LC_")}


def _probe(argv: Sequence[str], *, user: int | None = None) -> bool:
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=PROBE_TIMEOUT_S,
            user=user,
            group=user,
            extra_groups=[] if user is not None else None,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


@functools.cache
def detect_sandbox(*, as_user: int | None = None) -> SandboxKind:
    """The best isolation that actually works here (probed once, then cached)."""
    bwrap = shutil.which("bwrap")
    if bwrap and _probe([bwrap, *_PROBE_BWRAP], user=as_user):
        return SandboxKind.BWRAP
    unshare = shutil.which("unshare")
    if unshare and _probe([unshare, "-n", "-r", "--", "true"], user=as_user):
        logger.warning("bubblewrap does not work here; only `unshare -n` isolation is available")
        return SandboxKind.UNSHARE
    logger.warning(
        "no OS sandbox works here (install bubblewrap and allow user namespaces): "
        "sandboxed commands will need approval and code may reach the network"
    )
    return SandboxKind.NONE


def bwrap_argv(
    *,
    writable: Sequence[Path],
    cwd: Path,
    network: bool,
    hide_home: bool = True,
    read_only: Sequence[Path] = (),
    masks: Sequence[str] = (),
    tmp_bytes: int = TMP_BYTES,
) -> list[str]:
    """A bubblewrap prefix that shows only what a command needs: the toolchain
    (SYSTEM_FOLDERS, read-only, /etc without its secrets), an empty $HOME, a size-capped
    private /tmp and /dev/shm, the `writable` folders (with their `.git` config and hooks
    read-only), a new PID namespace, and the network only when `network`.

    Every capability is dropped: bwrap run by root otherwise keeps them all, and a command
    with CAP_SYS_ADMIN could remount folders read-write. `--new-session` denies TIOCSTI."""
    bwrap = shutil.which("bwrap") or "bwrap"
    argv = [bwrap]
    for folder in SYSTEM_FOLDERS:
        if os.path.islink(folder):
            argv += ["--symlink", os.readlink(folder), folder]  # /bin -> usr/bin
        elif os.path.isdir(folder):
            argv += ["--ro-bind", folder, folder]
    for secret in HIDDEN_SYSTEM_FILES:
        if os.path.isfile(secret) and not os.path.islink(secret):
            argv += ["--ro-bind", "/dev/null", secret]
    for folder in HIDDEN_SYSTEM_FOLDERS:
        if os.path.isdir(folder) and not os.path.islink(folder):
            argv += ["--tmpfs", folder]
    argv += [
        "--dev", "/dev",
        "--size", str(tmp_bytes), "--tmpfs", "/dev/shm",
        "--proc", "/proc",
        "--size", str(tmp_bytes), "--tmpfs", "/tmp",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--cap-drop", "ALL",
        "--new-session",
        "--die-with-parent",
    ]  # fmt: skip
    if hide_home:
        home = Path(os.path.expanduser("~"))
        if str(home) not in ("/", "") and not any(_within(home, w) for w in writable):
            argv += ["--tmpfs", str(home)]
    if network:
        resolv = _resolver_file()
        if resolv.is_file() and not _within(resolv, Path("/etc")):
            argv += ["--ro-bind", str(resolv), str(resolv)]  # the file alone, for DNS
    else:
        argv.append("--unshare-net")
    for shown in read_only:
        argv += ["--ro-bind", str(shown), str(shown)]
    for bound in writable:
        argv += ["--bind", str(bound), str(bound), *git_guards(bound)]
    argv += masks  # mounts over parts of the writable folders (path rules)
    argv += ["--chdir", str(cwd), "--"]
    return argv


GIT_GUARDED = ("config", "config.worktree", "hooks")
"""Parts of a repository's `.git` that run code at the user's next git command (hooks,
core.fsmonitor, core.hooksPath…): read-only in the sandbox."""


def git_guards(folder: Path) -> list[str]:
    """bubblewrap mounts that keep `folder/.git` in place and its config and hooks
    read-only (an empty hooks folder is made first, so that one cannot be planted where
    none was)."""
    git = folder / ".git"
    if git.is_symlink() or not git.is_dir():
        return []
    # .git itself becomes a mount point, so it cannot be renamed or removed and replaced
    # by a folder with a planted config
    out: list[str] = ["--bind", str(git), str(git)]
    if (git / "HEAD").exists():  # a repository (an empty stand-in gets no hooks folder)
        with contextlib.suppress(OSError):
            (git / "hooks").mkdir(exist_ok=True)
    for name in GIT_GUARDED:
        part = git / name
        if part.exists() and not part.is_symlink():
            out += ["--ro-bind", str(part), str(part)]
    return out


def open_bwrap_argv(
    *, cwd: Path, masks: Sequence[str], network: bool = True, keep_capabilities: bool = False
) -> list[str]:
    """A bubblewrap prefix that changes nothing but `masks`, the network and the PID
    namespace (for allow_all, and approved runs outside the workspace): / stays writable.
    Capabilities are dropped so the masks cannot be undone, unless `keep_capabilities`
    (no masks: a root caller's command keeps what it could do outside, e.g. install)."""
    bwrap = shutil.which("bwrap") or "bwrap"
    return [
        bwrap,
        "--bind", "/", "/",
        "--dev-bind", "/dev", "/dev",
        "--proc", "/proc",
        "--unshare-pid",
        *([] if keep_capabilities and not masks else ["--cap-drop", "ALL"]),
        "--new-session",
        "--die-with-parent",
        *([] if network else ["--unshare-net"]),
        *masks,
        "--chdir", str(cwd),
        "--",
    ]  # fmt: skip


def _resolver_file() -> Path:
    """Where /etc/resolv.conf really is (under /run with systemd-resolved)."""
    return Path(os.path.realpath("/etc/resolv.conf"))


def _within(path: Path, folder: Path) -> bool:
    """True when `folder` is `path` or one of its ancestors."""
    return path == folder or folder in path.parents


def processes_of_this_user() -> int:
    """How many processes this process's user runs now (0 without /proc): RLIMIT_NPROC
    counts them all, so a cap on what a command may add is set on top of this."""
    uid = os.getuid()
    count = 0
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else []:
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    count += 1
    return count


@dataclass(kw_only=True, slots=True)
class ProcessLimits:
    """rlimits applied in the child before exec (None: unchanged)."""

    cpu_s: int | None = None
    memory_bytes: int | None = None
    file_bytes: int | None = None
    processes: int | None = None
    open_files: int | None = 256

    def preexec(self) -> Callable[[], None]:
        import resource

        pairs: list[tuple[int, int]] = [(resource.RLIMIT_CORE, 0)]
        if self.cpu_s is not None:
            pairs.append((resource.RLIMIT_CPU, self.cpu_s))
        if self.memory_bytes is not None:
            pairs.append((resource.RLIMIT_AS, self.memory_bytes))
        if self.file_bytes is not None:
            pairs.append((resource.RLIMIT_FSIZE, self.file_bytes))
        if self.processes is not None:
            pairs.append((resource.RLIMIT_NPROC, self.processes))
        if self.open_files is not None:
            pairs.append((resource.RLIMIT_NOFILE, self.open_files))

        def apply() -> None:
            for which, value in pairs:
                with contextlib.suppress(ValueError, OSError):
                    resource.setrlimit(which, (value, value))

        return apply


@dataclass(kw_only=True, slots=True)
class ProcessOutcome:
    """What a finished (or killed) process produced."""

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    stdout_dropped: int = 0
    stderr_dropped: int = 0
    signal: str | None = None
    notes: list[str] = field(default_factory=list)


class OutputSink:
    """Keeps the first `cap` bytes of a stream and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.kept = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = self.cap - len(self.kept)
        if room > 0:
            self.kept += chunk[:room]
        self.dropped += max(0, len(chunk) - max(room, 0))

    async def drain(self, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        while chunk := await stream.read(65536):
            self.add(chunk)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    output_cap: int,
    limits: ProcessLimits | None = None,
    user: int | None = None,
    stdin: bytes | None = None,
) -> ProcessOutcome:
    """Run `argv` in its own process group; on timeout or cancellation the whole group is
    killed. stdout and stderr are each kept up to `output_cap` bytes (the rest drained)."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=str(cwd),
        env=dict(env),
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=limits.preexec() if limits is not None else None,
        user=user,
        group=user,
        extra_groups=[] if user is not None else None,
    )
    timed_out = False
    out, err = OutputSink(output_cap), OutputSink(output_cap)
    work = asyncio.gather(out.drain(proc.stdout), err.drain(proc.stderr), proc.wait())
    try:
        if stdin is not None and proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                proc.stdin.write(stdin)
                await proc.stdin.drain()
            proc.stdin.close()
        try:
            await asyncio.wait_for(asyncio.shield(work), timeout_s)
        except TimeoutError:
            timed_out = True
            _kill_group(proc.pid)
            try:
                # a process that left the group may still hold the pipes: stop waiting
                await asyncio.wait_for(asyncio.shield(work), KILL_GRACE_S)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await asyncio.wait_for(proc.wait(), KILL_GRACE_S)
    except BaseException:
        _kill_group(proc.pid)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        raise
    finally:
        _kill_group(proc.pid)  # leftovers of a finished leader (background jobs)
        if not work.done():
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await work
            # pipes still held by an escaped process: close our ends now, not at GC time
            transport = getattr(proc, "_transport", None)
            if transport is not None:
                transport.close()
    code = proc.returncode
    sig = None
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            sig = signal.Signals(-code).name
    return ProcessOutcome(
        exit_code=code,
        stdout=bytes(out.kept),
        stderr=bytes(err.kept),
        timed_out=timed_out,
        stdout_dropped=out.dropped,
        stderr_dropped=err.dropped,
        signal=sig,
    )
