"""How a skill's scripts run: a small protocol, and an adapter onto the code sandbox."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from raf.core.errors import ConfigurationError

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


LANGUAGES = {".py": "python", ".sh": "bash", ".js": "javascript"}


class CodeInterpreterRunner:
    """Runs skill scripts through raf's `code_interpreter` sandbox (`raf.tools.code`).

    The sandbox module is imported on first use, so skills work without it until a
    script is actually run.
    """

    def __init__(self, interpreter: Any = None) -> None:
        self._interpreter = interpreter

    def _get_interpreter(self) -> Any:
        if self._interpreter is None:
            try:
                module = importlib.import_module("raf.tools.code")
            except ImportError as exc:
                raise ConfigurationError(
                    "run_skill_script needs the code_interpreter sandbox (raf.tools.code), "
                    f"which cannot be imported: {exc}"
                ) from exc
            self._interpreter = module.CodeInterpreter()
        return self._interpreter

    async def run_script(
        self, script: Path, args: Sequence[str], *, cwd: Path, time_limit: float
    ) -> ScriptResult:
        interpreter = self._get_interpreter()
        language = LANGUAGES.get(script.suffix, "bash")
        code = await asyncio.to_thread(script.read_text, encoding="utf-8")
        outcome = await interpreter.run(
            code, language=language, args=list(args), cwd=str(cwd), timeout=time_limit
        )
        return ScriptResult(
            exit_code=int(getattr(outcome, "exit_code", 0) or 0),
            stdout=str(getattr(outcome, "stdout", "") or ""),
            stderr=str(getattr(outcome, "stderr", "") or ""),
            timed_out=bool(getattr(outcome, "timed_out", False)),
        )
