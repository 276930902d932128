"""How a skill's scripts run: a small protocol, and an adapter onto the code sandbox."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from raf.core.errors import ConfigurationError
from raf.tools.scope.confined import ConfinedFolder
from raf.tools.workspace import OutsideScopeError

DEFAULT_SCRIPT_TIMEOUT = 60.0


@dataclass(kw_only=True, slots=True)
class ScriptResult:
    """What a script run gives back to the model."""

    exit_code: int
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "exit_code": self.exit_code,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "timed_out": self.timed_out,
        }


@runtime_checkable
class ScriptRunner(Protocol):
    """Runs one script file of a skill, with arguments, in the skill's folder."""

    async def run_script(
        self, script: Path, args: Sequence[str], *, cwd: Path, time_limit: float
    ) -> ScriptResult: ...


MAX_SKILL_FILES_BYTES = 8_000_000


def script_language(script: Path, code: str) -> Literal["python", "bash"]:
    """python or bash, from the suffix or the shebang line."""
    if script.suffix == ".py":
        return "python"
    if script.suffix == ".sh":
        return "bash"
    first = code.split("\n", 1)[0]
    return "python" if first.startswith("#!") and "python" in first else "bash"


def collect_skill_files(script: Path, folder: Path) -> tuple[str, dict[str, bytes]]:
    """The script's code and a copy of the skill folder's plain files (links, special
    files, hard links and hidden entries are left out)."""
    code = script.read_text(encoding="utf-8")
    confined = ConfinedFolder(folder, label=f"skill folder {folder.name!r}")
    files: dict[str, bytes] = {}
    total = 0
    for relative in confined.files():  # plain files only, links never followed
        try:
            data = confined.read_bytes(relative, max_bytes=MAX_SKILL_FILES_BYTES - total)
        except (OSError, OutsideScopeError):
            continue  # a file swapped for a link, FIFO or hard link since the listing
        total += len(data)
        if total > MAX_SKILL_FILES_BYTES:
            raise ConfigurationError(
                f"skill folder {folder} holds over {MAX_SKILL_FILES_BYTES} bytes; too much to "
                "copy into the sandbox"
            )
        files[relative] = data
    return code, files


class CodeInterpreterRunner:
    """Runs skill scripts in raf's `code_interpreter` sandbox (`raf.tools.code`).

    The sandbox starts in an empty folder: the skill's files are copied into it, so the
    script sees its skill folder as its working directory (read-only for the original).
    The sandbox is imported on first use.
    """

    def __init__(self, interpreter: Any = None) -> None:
        self._interpreter = interpreter

    async def run_script(
        self, script: Path, args: Sequence[str], *, cwd: Path, time_limit: float
    ) -> ScriptResult:
        from raf.tools.code import CodeInterpreter

        interpreter = self._interpreter or CodeInterpreter(timeout_s=time_limit)
        code, files = await asyncio.to_thread(collect_skill_files, script, cwd)
        outcome = await interpreter.run(
            code, script_language(script, code), files=files, args=list(args)
        )
        return ScriptResult(
            exit_code=-1 if outcome.exit_code is None else int(outcome.exit_code),
            stdout=str(outcome.stdout),
            stderr=str(outcome.stderr),
            timed_out=bool(outcome.timed_out),
        )
