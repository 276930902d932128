"""AgentSkillsProvider: advertise skills by name and description, load them on request."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from raf.context.skills.model import Skill, clean_relative, load_skills
from raf.context.skills.runner import DEFAULT_SCRIPT_TIMEOUT, ScriptRunner
from raf.core.context import BaseContextProvider, ContextResult
from raf.core.errors import ConfigurationError, ToolExecutionError
from raf.core.function_tool import FunctionTool
from raf.core.messages import ChatMessage
from raf.core.options import AgentRunOptions
from raf.core.sessions import AgentSession
from raf.core.tools import Tool
from raf.tools.scope.confined import ConfinedFolder

log = logging.getLogger("raf.context.skills")

MAX_RESOURCE_BYTES = 512_000

INTRO = (
    "## Skills\n"
    "Skills hold instructions and reference material for particular tasks. Only their "
    "names and descriptions are listed here: when a task matches a skill, call "
    "`load_skill` with its name to read its instructions before you act."
)


class AgentSkillsProvider(BaseContextProvider):
    """Context provider of kind `skills` over folders in the Agent Skills format.

    `on_invoking` lists each skill's name and description (never its body) and injects
    `load_skill`, plus `read_skill_resource` when some skill has resources and
    `run_skill_script` when some skill has scripts and a `script_runner` is given.
    """

    kind = "skills"

    def __init__(
        self,
        directories: str | Path | Sequence[str | Path] = (),
        *,
        skills: Sequence[Skill] = (),
        name: str = "skills",
        script_runner: ScriptRunner | None = None,
        script_timeout: float = DEFAULT_SCRIPT_TIMEOUT,
    ) -> None:
        self.name = name
        self.script_runner = script_runner
        self.script_timeout = script_timeout
        if isinstance(directories, str | Path):
            directories = [directories]
        if not isinstance(directories, Sequence) or not all(
            isinstance(d, str | Path) for d in directories
        ):
            raise ConfigurationError(
                f"skills directories must be a path or a list of paths, not {directories!r}"
            )
        self.directories = [Path(d) for d in directories]
        self.live_directories: list[Path] = []
        """Folders read again before every run (their skills change while the agent runs)."""
        self.warnings: list[str] = []
        self._skills: dict[str, Skill] = {}
        for directory in self.directories:
            found, warnings = load_skills(directory)
            self.warnings.extend(warnings)
            for skill in found:
                self._add(skill)
        for skill in skills:
            if not isinstance(skill, Skill):
                raise ConfigurationError(f"skills= takes Skill objects, not {skill!r}")
            self._add(skill)

    def _add(self, skill: Skill) -> None:
        existing = self._skills.get(skill.name)
        if existing is not None:
            where = skill.path or "code"
            message = (
                f"skill {skill.name!r} from {where} ignored: a skill of that name was "
                f"already loaded from {existing.path or 'code'}"
            )
            log.warning("%s", message)
            self.warnings.append(message)
            return
        self._skills[skill.name] = skill

    def add_live_directory(self, directory: str | Path) -> None:
        """Offer the skills of `directory`, read again before every run (a memory folder
        the curator keeps writing)."""
        self.live_directories.append(Path(directory))

    def _refresh(self) -> None:
        for directory in self.live_directories:
            found, _ = load_skills(directory)
            for skill in found:
                self._skills[skill.name] = skill

    @property
    def skills(self) -> list[Skill]:
        return list(self._skills.values())

    def get(self, skill_name: str) -> Skill:
        """The named skill; an error listing the available ones otherwise."""
        skill = self._skills.get(skill_name)
        if skill is None:
            available = ", ".join(sorted(self._skills)) or "(none)"
            raise ToolExecutionError(f"unknown skill {skill_name!r}; available skills: {available}")
        return skill

    # -- what the model sees --------------------------------------------------------

    def instructions(self) -> str:
        lines = [INTRO]
        lines += [f"- {s.name}: {' '.join(s.description.split())}" for s in self.skills]
        return "\n".join(lines)

    def tools(self) -> list[Tool]:
        tools: list[Tool] = [
            FunctionTool(self._load_skill, name="load_skill", kind="skill", run_in_thread=False)
        ]
        if any(s.has_resources for s in self.skills):
            tools.append(
                FunctionTool(
                    self._read_skill_resource,
                    name="read_skill_resource",
                    kind="skill",
                    run_in_thread=False,
                )
            )
        if self.script_runner is not None and any(s.has_scripts for s in self.skills):
            tools.append(
                FunctionTool(
                    self._run_skill_script,
                    name="run_skill_script",
                    kind="skill",
                    run_in_thread=False,
                )
            )
        return tools

    async def on_invoking(
        self,
        agent: Any,
        session: AgentSession,
        messages: Sequence[ChatMessage],
        options: AgentRunOptions,
    ) -> ContextResult:
        if self.live_directories:
            await asyncio.to_thread(self._refresh)
        if not self._skills:
            return ContextResult()
        return ContextResult(instructions=self.instructions(), tools=self.tools())

    # -- the injected tools ---------------------------------------------------------

    async def _load_skill(self, skill_name: str) -> str:
        """Load a skill's full instructions; call this before doing a task a skill covers.

        Args:
            skill_name: the skill's name, as listed under Skills
        """
        skill = self.get(skill_name)
        parts = [f"# Skill: {skill.name}", "", skill.instructions]
        resources = skill.resource_names
        if resources:
            parts += ["", "Resources (read with read_skill_resource): " + ", ".join(resources)]
        if skill.scripts and self.script_runner is not None:
            parts += ["Scripts (run with run_skill_script): " + ", ".join(skill.scripts)]
        return "\n".join(parts)

    async def _read_skill_resource(self, skill_name: str, path: str) -> str:
        """Read one resource file of a skill (reference, example, template, …).

        Args:
            skill_name: the skill's name
            path: the resource's path inside the skill folder, as load_skill lists it
        """
        skill = self.get(skill_name)
        relative = clean_relative(path)
        if relative is None:
            raise ToolExecutionError(
                f"resource path {path!r} must be relative to the skill folder and stay inside it"
            )
        if relative in skill.resources:
            return skill.resources[relative]
        if relative not in skill.files:  # FORMS.md for forms.md: names differ only in case
            same = [f for f in skill.files if f.lower() == relative.lower()]
            relative = same[0] if len(same) == 1 else relative
        if skill.path is None or relative not in skill.files:
            listing = ", ".join(skill.resource_names) or "(none)"
            raise ToolExecutionError(
                f"skill {skill.name!r} has no resource {path!r}; its resources: {listing}"
            )
        folder = ConfinedFolder(skill.path, label=f"folder of skill {skill.name!r}")
        try:
            data = await asyncio.to_thread(_read_capped, folder, relative)
        except OSError as exc:
            raise ToolExecutionError(
                f"resource {relative!r} of skill {skill.name!r} cannot be read "
                f"({exc.strerror or exc})"
            ) from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolExecutionError(
                f"resource {relative!r} of skill {skill.name!r} is binary ({len(data)} bytes) "
                "and cannot be shown as text"
            ) from None

    async def _run_skill_script(
        self, skill_name: str, script: str, args: list[str] | None = None
    ) -> dict[str, Any]:
        """Run one of a skill's scripts in the sandbox and return its exit code and output.

        Args:
            skill_name: the skill's name
            script: the script's path inside the skill folder, as load_skill lists it
            args: command-line arguments for the script
        """
        skill = self.get(skill_name)
        relative = clean_relative(script)
        if relative is None or skill.path is None or relative not in skill.scripts:
            listing = ", ".join(skill.scripts) or "(none)"
            raise ToolExecutionError(
                f"skill {skill.name!r} has no script {script!r}; its scripts: {listing}"
            )
        if self.script_runner is None:
            raise ToolExecutionError("no script runner is configured for skills")
        target = _inside(skill.path, relative)
        result = await self.script_runner.run_script(
            target, list(args or []), cwd=skill.path.resolve(), time_limit=self.script_timeout
        )
        return result.to_dict()

    def __repr__(self) -> str:
        return f"AgentSkillsProvider({self.name!r}, skills={sorted(self._skills)})"


def _inside(folder: Path, relative: str) -> Path:
    """The resolved path of `relative` in `folder`; refused if it leads outside."""
    root = folder.resolve()
    target = (root / relative).resolve()
    if not target.is_relative_to(root):
        raise ToolExecutionError(f"{relative!r} leads outside the skill folder; refused")
    return target


def _read_capped(folder: ConfinedFolder, relative: str) -> bytes:
    """At most MAX_RESOURCE_BYTES of a regular file (never a FIFO, device or outside link)."""
    data = folder.read_bytes(relative, max_bytes=MAX_RESOURCE_BYTES)
    if len(data) > MAX_RESOURCE_BYTES:
        note = f"\n[… cut: the file is larger than {MAX_RESOURCE_BYTES} bytes]"
        return data[:MAX_RESOURCE_BYTES] + note.encode()
    return data
