"""run_command: a shell command in the workspace folder, with a timeout that kills the
whole process group, an output cap, a scrubbed environment and (when the policy asks for
it) a bubblewrap sandbox in which only the workspace is writable."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from raf.core.function_tool import describe_validation_error
from raf.core.tools import ToolContext, ToolResult
from raf.tools._locate import located
from raf.tools._scoped import FileLimits, PathUse, ScopedTool, os_message, was_approved
from raf.tools.sandbox import (
    SandboxKind,
    bwrap_argv,
    detect_sandbox,
    run_process,
    scrub_environment,
)
from raf.tools.workspace import Access, OutsideScopeError, ScopePolicy, WorkspaceScope

logger = logging.getLogger("raf.tools.shell")

DEFAULT_TIMEOUT_S = 60.0
MAX_TIMEOUT_S = 600.0
DEFAULT_OUTPUT_CAP = 32_000


class RunCommand(ScopedTool):
    """The eleventh scope tool. Under DENY_OUTSIDE (and APPROVE_OUTSIDE) commands run in
    bubblewrap with only the workspace writable; where no sandbox works, every command
    needs approval. `outside_workspace=true` runs unsandboxed and always needs approval
    (refused under DENY_OUTSIDE)."""

    name = "run_command"
    description = (
        "Run a shell command (sh -c) in the workspace folder and return exit code, stdout "
        "and stderr. Commands time out; long output is cut."
    )
    kind = "file"

    class Arguments(BaseModel):
        model_config = ConfigDict(extra="forbid")
        command: str = Field(min_length=1, description="Shell command line")
        cwd: str = Field(".", description="Working folder, relative to the workspace root")
        timeout_s: float = Field(DEFAULT_TIMEOUT_S, gt=0, le=MAX_TIMEOUT_S)
        outside_workspace: bool = Field(
            False,
            description="Run without the sandbox so it may write outside the workspace "
            "(needs a human's approval)",
        )

    def __init__(
        self,
        scope: WorkspaceScope | None = None,
        *,
        limits: FileLimits | None = None,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        allow_env: Iterable[str] = (),
        env: Mapping[str, str] | None = None,
        network: bool = True,
        sandbox: SandboxKind | None = None,
    ) -> None:
        super().__init__(scope, limits=limits)
        self.output_cap = output_cap
        self.allow_env = tuple(allow_env)
        self.env = dict(env) if env is not None else None
        self.network = network
        self._sandbox = sandbox

    def create_scoped(self, scope: WorkspaceScope) -> Self:
        return type(self)(
            scope,
            limits=self.limits,
            output_cap=self.output_cap,
            allow_env=self.allow_env,
            env=self.env,
            network=self.network,
            sandbox=self._sandbox,
        )

    @property
    def sandbox(self) -> SandboxKind:
        """bubblewrap when it works here; otherwise NONE (unshare cannot make / read-only)."""
        if self._sandbox is None:
            self._sandbox = detect_sandbox()
        return self._sandbox

    def _sandboxed(self, scope: WorkspaceScope) -> bool:
        return scope.policy is not ScopePolicy.ALLOW_ALL

    @property
    def requires_approval(self) -> bool:
        scope = self.effective_scope()
        if scope.policy is ScopePolicy.APPROVE_OUTSIDE or scope.has_approval_rules:
            return True
        return scope.policy is ScopePolicy.DENY_OUTSIDE and self.sandbox is not SandboxKind.BWRAP

    def uses(self, args: Any) -> list[PathUse]:
        return [PathUse(path=args.cwd, access=Access.EXECUTE)]

    def approval_required(self, arguments: Mapping[str, Any]) -> bool:
        try:
            args = self.Arguments.model_validate(arguments)
        except ValidationError:
            return False
        scope = self.effective_scope()
        if scope.policy is ScopePolicy.APPROVE_OUTSIDE and args.outside_workspace:
            return True
        no_sandbox = self.sandbox is not SandboxKind.BWRAP
        if self._sandboxed(scope) and not args.outside_workspace and no_sandbox:
            return True  # no sandbox here: a human decides every command
        return super().approval_required(arguments)

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        try:
            args = self.Arguments.model_validate(arguments)
        except ValidationError as exc:
            return ToolResult.fail(describe_validation_error(self.name, exc))
        scope = self.effective_scope()
        approved = was_approved(context, self.name, arguments)
        if args.outside_workspace and scope.policy is ScopePolicy.DENY_OUTSIDE:
            return ToolResult.fail("OutsideScope: the workspace policy forbids running outside it")
        if args.outside_workspace and scope.policy is ScopePolicy.APPROVE_OUTSIDE and not approved:
            return ToolResult.fail("OutsideScope: running outside the sandbox needs approval")
        use_bwrap = self._sandboxed(scope) and not args.outside_workspace
        if use_bwrap and self.sandbox is not SandboxKind.BWRAP and not approved:
            return ToolResult.fail(
                "OutsideScope: no OS sandbox (bubblewrap) works on this machine, so every "
                "command needs a human's approval"
            )
        try:
            cwd = await _checked_cwd(scope, args.cwd, approved)
        except OutsideScopeError as exc:
            return ToolResult.fail(str(exc))
        except OSError as exc:
            return ToolResult.fail(f"{self.name}: {os_message(exc)}")
        argv = ["/bin/sh", "-c", args.command]
        sandbox_used = "none"
        if use_bwrap and self.sandbox is SandboxKind.BWRAP:
            argv = [
                *bwrap_argv(writable=[scope.real_root], cwd=cwd, network=self.network),
                *argv,
            ]
            sandbox_used = "bubblewrap"
        env = scrub_environment(self.env, allow=self.allow_env)
        outcome = await run_process(
            argv,
            cwd=cwd,
            env=env,
            timeout_s=args.timeout_s,
            output_cap=self.output_cap,
        )
        value: dict[str, Any] = {
            "exit_code": outcome.exit_code,
            "stdout": outcome.stdout.decode("utf-8", errors="replace"),
            "stderr": outcome.stderr.decode("utf-8", errors="replace"),
            "sandbox": sandbox_used,
        }
        if outcome.stdout_dropped or outcome.stderr_dropped:
            value["note"] = (
                f"output cut at {self.output_cap} bytes per stream "
                f"({outcome.stdout_dropped} stdout and {outcome.stderr_dropped} stderr bytes "
                "dropped)"
            )
        if outcome.timed_out:
            return ToolResult.fail(
                f"command timed out after {args.timeout_s:g}s; its process group was killed. "
                f"Partial stdout: {value['stdout'][-2000:]!r}"
            )
        return ToolResult.ok(value)


async def _checked_cwd(scope: WorkspaceScope, cwd: str, approved: bool) -> Path:
    import asyncio

    def check() -> Path:
        with located(scope, cwd, Access.EXECUTE, approved=approved) as loc:
            if not loc.is_dir:
                raise NotADirectoryError(20, f"{cwd!r} is not a folder")
            return loc.path

    return await asyncio.to_thread(check)
