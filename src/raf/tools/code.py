"""code_interpreter: run Python or shell code in a throw-away folder under OS limits (CPU,
memory, file size, process count, wall clock), without network where the OS allows it, and
return stdout, stderr, the exit code and the files the code produced."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from raf.core.model_tool import ModelTool
from raf.core.tools import ToolContext, ToolResult
from raf.tools.container import (
    STDIN_FILE,
    Bind,
    ContainerEngineError,
    ContainerRunner,
    default_user,
)
from raf.tools.sandbox import (
    CONTAINER_ENVIRONMENT,
    KILL_GRACE_S,
    ContainerSandbox,
    ProcessLimits,
    ProcessOutcome,
    SandboxKind,
    allowed_environment,
    bwrap_argv,
    detect_sandbox,
    processes_of_this_user,
    run_process,
)
from raf.tools.scope.budget import CallBudget

NOBODY = 65534
CONTAINER_WORKDIR = "/work"
"""Where a container sees the run's folder."""
Language = Literal["python", "shell", "bash"]
_SCRIPTS = {"python": "main.py", "shell": "main.sh", "bash": "main.sh"}


@dataclass(kw_only=True, slots=True)
class ProducedFile:
    """A file the code created or changed in its working folder."""

    name: str
    size: int
    content: bytes | None
    """None when larger than the interpreter's `max_file_bytes` (or not a plain file)."""


@dataclass(kw_only=True, slots=True)
class CodeResult:
    """What a run produced."""

    stdout: str
    stderr: str
    exit_code: int | None
    files: list[ProducedFile] = field(default_factory=list)
    timed_out: bool = False
    signal: str | None = None
    sandbox: str = "none"
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


def _others_can_run(path: str) -> bool:
    """True when every folder above `path` is searchable and the file runnable by anyone."""
    real = Path(os.path.realpath(path))
    try:
        if not real.stat().st_mode & stat.S_IXOTH:
            return False
        return all(p.stat().st_mode & stat.S_IXOTH for p in real.parents)
    except OSError:
        return False


def python_folders(python: str) -> list[Path]:
    """The folders the sandbox shows read-only so that `python` runs in it: the
    installation it resolves to, and the virtual environment it is called through (a venv
    in $HOME or /tmp, both of which the sandbox hides, holds the path that is run)."""
    out: list[Path] = []
    for path in (os.path.realpath(python), os.path.abspath(python)):
        folder = Path(path).parent.parent
        if folder != Path("/") and folder not in out:
            out.append(folder)
    return out


def _pick_python(other_user: bool) -> str:
    """This interpreter, or (when the code runs as another user who cannot reach it) the
    system's python3."""
    current = sys.executable or "python3"
    if not other_user or _others_can_run(current):
        return current
    for candidate in ("/usr/local/bin/python3", "/usr/bin/python3", "/bin/python3"):
        if os.path.exists(candidate) and _others_can_run(candidate):
            return candidate
    return current


class CodeInterpreter(ModelTool):
    """Runs code in a process sandbox, or with `container=ContainerSandbox(...)` in a fresh
    container per call; usable as a tool and programmatically (`run`)."""

    name = "code_interpreter"
    kind = "code"
    requires_approval = False
    description = (
        "Run Python 3 (or a POSIX shell script) in a fresh, empty temporary folder and get "
        "stdout, stderr, the exit code and the files it wrote. No network; CPU, memory and "
        "time are limited. State does not persist between calls."
    )

    class Arguments(BaseModel):
        model_config = ConfigDict(extra="forbid")
        code: str = Field(min_length=1, description="The program to run")
        language: Language = Field("python", description="python or shell")

    def __init__(
        self,
        *,
        timeout_s: float = 30.0,
        cpu_s: int | None = None,
        memory_mb: int = 512,
        file_mb: int = 64,
        max_processes: int = 32,
        output_cap: int = 64_000,
        max_file_bytes: int = 1_000_000,
        max_files: int = 100,
        max_total_bytes: int = 8_000_000,
        network: bool = False,
        python: str | None = None,
        run_as: int | None = None,
        container: ContainerSandbox | None = None,
    ) -> None:
        self.timeout_s = timeout_s
        self.cpu_s = cpu_s if cpu_s is not None else max(1, int(timeout_s))
        self.memory_mb = memory_mb
        self.file_mb = file_mb
        self.max_processes = max_processes
        self.output_cap = output_cap
        self.max_file_bytes = max_file_bytes
        self.max_files = max_files
        """Most produced files reported (the rest are counted in a note)."""
        self.max_total_bytes = max_total_bytes
        """Most bytes of produced files read back in all (later files come without content)."""
        self.network = network
        self.run_as = run_as if run_as is not None else (NOBODY if os.geteuid() == 0 else None)
        self.python = python or _pick_python(self.run_as is not None)
        self._python_folders = python_folders(self.python)
        self.container = container
        """When set, each run is a fresh container of this sandbox (see ContainerSandbox)."""
        self._runner: ContainerRunner | None = None
        self._owner = self._file_owner()

    def _file_owner(self) -> int | None:
        """Whom the run's folder is given to (when raf runs as root): the container's
        numeric user, else `run_as`."""
        if self.container is not None and os.geteuid() == 0:
            user = (self.container.user or "").split(":", 1)[0]
            if user.isdigit():
                return int(user)
        return self.run_as

    @property
    def budget(self) -> CallBudget:
        """What one call may spend, enforced by the timeout, the rlimits and the caps on
        output and produced files."""
        return CallBudget(
            wall_s=self.timeout_s + 2 * KILL_GRACE_S,
            memory_bytes=(
                self.container.memory_mb if self.container is not None else self.memory_mb
            )
            * 1024
            * 1024,
            output_bytes=2 * self.output_cap + self.max_total_bytes,
        )

    async def call(self, args: Any, context: ToolContext) -> ToolResult:
        try:
            result = await self.run(args.code, language=args.language)
        except ContainerEngineError as exc:
            return ToolResult.fail(f"{self.name}: {exc}")
        files = []
        for produced in result.files:
            item: dict[str, Any] = {"name": produced.name, "size": produced.size}
            if produced.content is not None and len(produced.content) <= 4000:
                with contextlib.suppress(UnicodeDecodeError):
                    item["text"] = produced.content.decode("utf-8")
            files.append(item)
        value: dict[str, Any] = {
            "exit_code": result.exit_code,
            "stdout": result.stdout,
            "stderr": result.stderr,
            "files": files,
        }
        if result.notes:
            value["notes"] = result.notes
        return ToolResult.ok(value)

    async def run(
        self,
        code: str,
        language: Language = "python",
        *,
        files: Mapping[str, bytes | str] | None = None,
        args: Sequence[str] = (),
        stdin: bytes | None = None,
    ) -> CodeResult:
        """Run `code` with `files` placed in its working folder; never raises for what
        the code does (errors, limits and timeouts are in the result). With a container,
        ContainerEngineError says when no engine can run it."""
        workdir = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="raf-code-"))
        try:
            before = await asyncio.to_thread(self._prepare, workdir, code, language, files or {})
            if self.container is not None:
                return await self._execute_in_container(
                    self.container, workdir, language, args, stdin, before
                )
            return await self._execute(workdir, language, args, stdin, before)
        finally:
            await asyncio.to_thread(shutil.rmtree, workdir, True)

    async def aclose(self) -> None:
        """Close the container engine's client (each run's container is already gone)."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await asyncio.to_thread(runner.close)

    async def _execute_in_container(
        self,
        box: ContainerSandbox,
        workdir: Path,
        language: str,
        args: Sequence[str],
        stdin: bytes | None,
        before: dict[str, str],
    ) -> CodeResult:
        """One run in a fresh container: the run's folder at CONTAINER_WORKDIR (the only
        writable place besides the /tmp tmpfs), removed with the container afterwards."""
        if self._runner is None:
            self._runner = ContainerRunner(box)
        script = _SCRIPTS[language]
        if language == "python":
            command = [box.python, "-I", script, *args]
        else:
            command = ["/bin/bash" if language == "bash" else "/bin/sh", script, *args]
        feed: Path | None = None
        if stdin is not None:
            feed = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="raf-stdin-"))
            await asyncio.to_thread(self._write_stdin, feed, stdin)
        try:
            user = box.user if box.user is not None else default_user(workdir)
            outcome = await self._runner.run(
                command,
                mounts=[Bind(source=workdir, target=CONTAINER_WORKDIR, read_only=False)],
                cwd=CONTAINER_WORKDIR,
                env={**CONTAINER_ENVIRONMENT, "PYTHONDONTWRITEBYTECODE": "1"},
                user=user,
                network=self.network,
                timeout_s=self.timeout_s,
                output_cap=self.output_cap,
                stdin=feed,
                file_bytes=self.file_mb * 1024 * 1024,
                cpu_s=self.cpu_s,
            )
        finally:
            if feed is not None:
                await asyncio.to_thread(shutil.rmtree, feed, True)
        notes = list(outcome.notes)
        if self.network and not box.network:
            notes.append("the container sandbox gives code no network (network=False)")
        if outcome.timed_out:
            notes.append(f"wall-clock limit of {self.timeout_s:g}s reached: container killed")
        if outcome.stdout_dropped or outcome.stderr_dropped:
            notes.append(f"output cut at {self.output_cap} bytes per stream")
        stderr = outcome.stderr.decode("utf-8", errors="replace")
        if "Resource temporarily unavailable" in stderr or "BlockingIOError" in stderr:
            notes.append(f"process limit of {box.pids} reached")
        return await self._result(outcome, stderr, workdir, before, notes, "container")

    def _write_stdin(self, folder: Path, data: bytes) -> None:
        (folder / STDIN_FILE).write_bytes(data)
        if self._owner is not None:
            for path in (folder, folder / STDIN_FILE):
                os.chown(path, self._owner, self._owner, follow_symlinks=False)

    def _prepare(
        self, workdir: Path, code: str, language: str, files: Mapping[str, bytes | str]
    ) -> dict[str, str]:
        script = _SCRIPTS[language]
        (workdir / script).write_text(code, encoding="utf-8")
        hashes: dict[str, str] = {}
        for name, data in files.items():
            rel = Path(name)
            if rel.is_absolute() or ".." in rel.parts:
                raise ValueError(f"input file name {name!r} must be relative, without '..'")
            target = workdir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            raw = data.encode("utf-8") if isinstance(data, str) else data
            target.write_bytes(raw)
            hashes[rel.as_posix()] = hashlib.sha256(raw).hexdigest()
        hashes[script] = "script"
        if self._owner is not None:
            for path in [workdir, *workdir.rglob("*")]:
                os.chown(path, self._owner, self._owner, follow_symlinks=False)
        return hashes

    async def _execute(
        self,
        workdir: Path,
        language: str,
        args: Sequence[str],
        stdin: bytes | None,
        before: dict[str, str],
    ) -> CodeResult:
        script = _SCRIPTS[language]
        if language == "python":
            command = [self.python, "-I", script, *args]
        else:
            command = ["/bin/bash" if language == "bash" else "/bin/sh", script, *args]
        kind = await asyncio.to_thread(detect_sandbox, as_user=self.run_as)
        notes: list[str] = []
        if kind is SandboxKind.BWRAP:
            # the interpreter may live below a folder the sandbox hides ($HOME, /tmp): show it
            argv = [
                *bwrap_argv(
                    writable=[workdir],
                    cwd=workdir,
                    network=self.network,
                    read_only=self._python_folders,
                ),
                *command,
            ]
        elif kind is SandboxKind.UNSHARE and not self.network:
            argv = ["unshare", "-n", "-r", "--", *command]
            notes.append("bubblewrap is unavailable: no network, but the filesystem is shared")
        else:
            argv = command
            if not self.network:
                notes.append("no sandbox works here: the code could use the network")
        limits = ProcessLimits(
            cpu_s=self.cpu_s,
            memory_bytes=self.memory_mb * 1024 * 1024,
            file_bytes=self.file_mb * 1024 * 1024,
            processes=self._process_limit(),
        )
        env = allowed_environment()
        env.update(HOME=str(workdir), TMPDIR=str(workdir), PYTHONDONTWRITEBYTECODE="1")
        outcome = await run_process(
            argv,
            cwd=workdir,
            env=env,
            timeout_s=self.timeout_s,
            output_cap=self.output_cap,
            limits=limits,
            user=self.run_as,
            stdin=stdin,
        )
        if outcome.timed_out:
            notes.append(f"wall-clock limit of {self.timeout_s:g}s reached: process group killed")
        if outcome.signal in ("SIGXCPU", "SIGKILL") and not outcome.timed_out:
            notes.append(f"stopped by {outcome.signal} (CPU limit {self.cpu_s}s or memory)")
        if outcome.stdout_dropped or outcome.stderr_dropped:
            notes.append(f"output cut at {self.output_cap} bytes per stream")
        stderr = outcome.stderr.decode("utf-8", errors="replace")
        if "MemoryError" in stderr or "Cannot allocate memory" in stderr:
            notes.append(f"memory limit of {self.memory_mb} MB reached")
        if "Resource temporarily unavailable" in stderr or "BlockingIOError" in stderr:
            notes.append(f"process limit of {self.max_processes} reached")
        sandbox = kind.value if (kind is SandboxKind.BWRAP or not self.network) else "none"
        return await self._result(outcome, stderr, workdir, before, notes, sandbox)

    async def _result(
        self,
        outcome: ProcessOutcome,
        stderr: str,
        workdir: Path,
        before: dict[str, str],
        notes: list[str],
        sandbox: str,
    ) -> CodeResult:
        """The call's result: its output, the files it produced, and the notes made."""
        produced = await asyncio.to_thread(self._collect, workdir, before, notes)
        return CodeResult(
            stdout=outcome.stdout.decode("utf-8", errors="replace"),
            stderr=stderr,
            exit_code=outcome.exit_code,
            files=produced,
            timed_out=outcome.timed_out,
            signal=outcome.signal,
            sandbox=sandbox,
            notes=notes,
        )

    def _process_limit(self) -> int:
        if self.run_as is not None:
            return self.max_processes
        return processes_of_this_user() + self.max_processes

    def _collect(
        self, workdir: Path, before: dict[str, str], notes: list[str]
    ) -> list[ProducedFile]:
        """The files the code produced: at most `max_files`, whose contents read back total
        at most `max_total_bytes` (600 files of 1 MB must not become 600 MB in raf)."""
        out: list[ProducedFile] = []
        total = 0
        seen = 0
        left_out = 0
        for dirpath, dirnames, filenames, dir_fd in os.fwalk(workdir, follow_symlinks=False):
            dirnames.sort()
            for name in sorted(filenames):
                rel = os.path.relpath(os.path.join(dirpath, name), workdir)
                if before.get(rel) == "script":
                    continue
                seen += 1
                if len(out) >= self.max_files:
                    left_out += 1
                    if seen > 10 * self.max_files:
                        break  # stop walking a tree of countless files
                    continue
                try:
                    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
                except OSError:
                    continue  # symlinks and the like are not reported
                try:
                    st = os.fstat(fd)
                    if not stat.S_ISREG(st.st_mode):
                        continue
                    content = None
                    room = self.max_total_bytes - total
                    if st.st_size <= min(self.max_file_bytes, room) and st.st_nlink == 1:
                        content = os.read(fd, min(self.max_file_bytes, room) + 1)
                        total += len(content)
                finally:
                    os.close(fd)
                if content is not None and before.get(rel) == hashlib.sha256(content).hexdigest():
                    continue  # an input left unchanged
                out.append(ProducedFile(name=rel, size=st.st_size, content=content))
        if left_out:
            more = "or more " if seen > 10 * self.max_files else ""
            notes.append(f"{left_out} {more}further files not listed (limit {self.max_files})")
        if total >= self.max_total_bytes or any(
            f.content is None and f.size <= self.max_file_bytes for f in out
        ):
            notes.append(
                f"file contents read back are capped at {self.max_total_bytes} bytes in all"
            )
        return out

    def __repr__(self) -> str:
        return f"<CodeInterpreter timeout={self.timeout_s}s memory={self.memory_mb}MB>"
