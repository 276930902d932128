"""run_command: a shell command in the workspace folder, with a timeout that kills the
whole process group, an output cap, a scrubbed environment and (when the policy asks for
it) a bubblewrap sandbox in which only the workspace is writable."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from raf.core.call_approval import was_approved
from raf.core.function_tool import describe_validation_error
from raf.core.tools import ToolContext, ToolResult
from raf.tools.command_guard import (
    MAX_MASKS,
    CommandGuard,
    restricts,
    writes_need_approval,
)
from raf.tools.container import (
    Bind,
    ContainerEngineError,
    ContainerRunner,
    default_user,
    mounts_from_bwrap,
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
    git_guards,
    open_bwrap_argv,
    processes_of_this_user,
    run_process,
)
from raf.tools.scope.budget import CallBudget
from raf.tools.scope.locate import located
from raf.tools.scope.scoped_tool import FileLimits, PathUse, ScopedTool, os_message
from raf.tools.workspace import (
    Access,
    OutsideScopeError,
    RuleAction,
    ScopePolicy,
    WorkspaceScope,
)

logger = logging.getLogger("raf.tools.shell")

DEFAULT_TIMEOUT_S = 60.0
MAX_TIMEOUT_S = 600.0
DEFAULT_OUTPUT_CAP = 32_000


class RunCommand(ScopedTool):
    """The eleventh scope tool. Under DENY_OUTSIDE (and APPROVE_OUTSIDE) commands run in
    bubblewrap with only the workspace writable; where no sandbox works, every command
    needs approval. `outside_workspace=true` runs unsandboxed and always needs approval
    (refused under DENY_OUTSIDE).

    With `container=ContainerSandbox(...)` every command (but an approved
    `outside_workspace` one) runs in a fresh container instead, under every policy: the
    workspace is mounted at its own path, with what the path rules hide covered and what
    they keep from changes read-only, and nothing else of the host is seen."""

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
        network: bool = Field(
            False,
            description="Let this command use the network (under the deny/approve policies "
            "it needs a human's approval unless network is allowed for all commands)",
        )
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
        network: bool | None = None,
        sandbox: SandboxKind | None = None,
        process_limits: ProcessLimits | None = None,
        budget: CallBudget | None = None,
        container: ContainerSandbox | None = None,
    ) -> None:
        super().__init__(scope, limits=limits)
        self.container = container
        """When set, commands run in a fresh container of this sandbox (ContainerSandbox)."""
        self._runner: ContainerRunner | None = None
        self.output_cap = output_cap
        self.allow_env = tuple(allow_env)
        self.env = dict(env) if env is not None else None
        self._network = network
        self._sandbox = sandbox
        self.process_limits = process_limits or default_process_limits()
        self.budget = budget or CallBudget(
            wall_s=MAX_TIMEOUT_S + 2 * KILL_GRACE_S,
            memory_bytes=self.process_limits.memory_bytes or CallBudget().memory_bytes,
            output_bytes=2 * output_cap + 4_096,
        )
        """Enforced by the call's timeout (at most MAX_TIMEOUT_S), the rlimits and the
        per-stream output cap."""

    def create_scoped(self, scope: WorkspaceScope) -> Self:
        return type(self)(
            scope,
            limits=self.limits,
            output_cap=self.output_cap,
            allow_env=self.allow_env,
            env=self.env,
            network=self._network,
            sandbox=self._sandbox,
            process_limits=self.process_limits,
            budget=self.budget,
            container=self.container,
        )

    async def aclose(self) -> None:
        """Close the container engine's client (each command's container is already gone)."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await asyncio.to_thread(runner.close)

    @property
    def network(self) -> bool:
        """Whether commands reach the network: as configured, else only under allow_all
        (under deny/approve a command could otherwise send what it reads anywhere)."""
        if self._network is not None:
            return self._network
        return self.effective_scope().policy is ScopePolicy.ALLOW_ALL

    def _call_network(self, scope: WorkspaceScope, asked: bool, approved: bool) -> bool | str:
        """Whether this call gets the network, or why it may not have it."""
        if self.network or not asked:
            return self.network
        if self._network is False:
            return "this run_command was configured without network (network=False)"
        if scope.policy is ScopePolicy.APPROVE_OUTSIDE:
            return True if approved else "a command with network needs a human's approval"
        return "the workspace policy (deny_outside) gives commands no network"

    @property
    def isolated(self) -> bool:
        """Whether sandboxed commands have a sandbox here: a container, or bubblewrap."""
        return self.container is not None or self.sandbox is SandboxKind.BWRAP

    @property
    def sandbox(self) -> SandboxKind:
        """bubblewrap when it works here; otherwise NONE (unshare cannot make / read-only)."""
        if self._sandbox is None:
            self._sandbox = detect_sandbox()
        return self._sandbox

    def _sandboxed(self, scope: WorkspaceScope, outside_workspace: bool = False) -> bool:
        """Whether a command runs in bubblewrap: always under deny/approve (unless it was
        allowed out), and under allow_all when path rules restrict something or the
        network is off (the sandbox then leaves / writable and only enforces those)."""
        if scope.policy is ScopePolicy.ALLOW_ALL:
            return has_restricting_rules(scope) or not self.network
        return not outside_workspace

    @property
    def requires_approval(self) -> bool:
        scope = self.effective_scope()
        if scope.policy is ScopePolicy.APPROVE_OUTSIDE or scope.has_approval_rules:
            return True
        return self._sandboxed(scope) and not self.isolated

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
        if args.network and not self.network and self._network is not False:
            return scope.policy is ScopePolicy.APPROVE_OUTSIDE
        if self._sandboxed(scope, args.outside_workspace) and not self.isolated:
            return True  # no sandbox here: a human decides every command
        if writes_need_approval(scope):
            return True  # which paths a command writes is known only once it ran
        return super().approval_required(arguments)

    def approval_reason(self, arguments: Mapping[str, Any]) -> str | None:
        """Why this command waits for a person (None when it does not)."""
        try:
            args = self.Arguments.model_validate(arguments)
        except ValidationError:
            return None
        scope = self.effective_scope()
        where = f"workspace {scope.name!r} (policy {scope.policy.value})"
        if scope.policy is ScopePolicy.APPROVE_OUTSIDE and args.outside_workspace:
            return f"the command asks to run outside the sandbox of {where}"
        if args.network and not self.network and self._network is not False:
            return f"the command asks for network access, which {where} does not give"
        if self._sandboxed(scope, args.outside_workspace) and not self.isolated:
            return (
                f"no OS sandbox (bubblewrap) works on this machine, so every command in {where} "
                "needs a person's approval"
            )
        if writes_need_approval(scope):
            return _write_approval_reason(scope)
        return super().approval_reason(arguments)

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
        network = self._call_network(scope, args.network, approved)
        if isinstance(network, str):
            return ToolResult.fail(f"OutsideScope: {network}")
        if writes_need_approval(scope) and not approved:
            return ToolResult.fail(f"OutsideScope: {_write_approval_reason(scope)}")
        if self.container is not None and not args.outside_workspace:
            return await self._invoke_in_container(
                self.container, scope, args, network, approved, context
            )
        use_bwrap = self._sandboxed(scope, args.outside_workspace)
        if use_bwrap and self.sandbox is not SandboxKind.BWRAP and not approved:
            return ToolResult.fail(
                "OutsideScope: no OS sandbox (bubblewrap) works on this machine, so every "
                "command needs a human's approval"
            )
        cwd = await _checked_cwd(self.name, scope, args.cwd, approved)
        if isinstance(cwd, ToolResult):
            return cwd
        argv = ["/bin/sh", "-c", args.command]
        sandbox_used = "none"
        if not use_bwrap and self.sandbox is SandboxKind.BWRAP:
            # allow_all, or an approved run outside the workspace: nothing is hidden, but a
            # PID namespace of its own means a daemon started with setsid dies with the
            # call and /proc shows nothing of raf
            prefix = open_bwrap_argv(cwd=cwd, masks=[], network=True, keep_capabilities=True)
            argv = [*prefix, *argv]
            sandbox_used = "pid-namespace"
        guard: CommandGuard | None = None
        if use_bwrap and self.sandbox is SandboxKind.BWRAP:
            prepared = await _guarded(scope, approved, "sandbox", "needs a human's approval")
            if isinstance(prepared, ToolResult):
                return prepared
            guard = prepared
            if scope.policy is ScopePolicy.ALLOW_ALL:
                prefix = open_bwrap_argv(cwd=cwd, masks=guard.masks, network=network)
            else:
                prefix = bwrap_argv(
                    writable=[scope.real_root], cwd=cwd, network=network, masks=guard.masks
                )
            argv = [*prefix, *argv]
            sandbox_used = "bubblewrap"
        env = allowed_environment(self.env, allow=self.allow_env)
        if context.idempotency_key:  # a command that can deduplicate reads it here
            env = {**env, "RAF_IDEMPOTENCY_KEY": context.idempotency_key}
        try:
            outcome = await run_process(
                argv,
                cwd=cwd,
                env=env,
                timeout_s=args.timeout_s,
                output_cap=self.output_cap,
                limits=with_process_cap(self.process_limits),
            )
        finally:
            planted = await _finished(guard)  # the sandbox's processes are all gone now
        if planted is not None:
            return _refused_after(planted, outcome)
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

    async def _invoke_in_container(
        self,
        box: ContainerSandbox,
        scope: WorkspaceScope,
        args: Any,
        network: bool,
        approved: bool,
        context: ToolContext,
    ) -> ToolResult:
        """One command in a fresh container: the workspace at its own path (read-only
        where the rules keep the root from changes; covered or read-only where they say
        so; `.git`'s config and hooks read-only), /tmp a tmpfs, the rest the image."""
        cwd = await _checked_cwd(self.name, scope, args.cwd, approved)
        if isinstance(cwd, ToolResult):
            return cwd
        guard = await _guarded(scope, approved, "container", "cannot run")
        if isinstance(guard, ToolResult):
            return guard
        root = scope.real_root
        writable = not restricts(scope.decide(".", Access.WRITE).action, approved)
        mounts = [
            Bind(source=root, target=str(root), read_only=not writable),
            *mounts_from_bwrap([*git_guards(root), *guard.masks], under=root),
        ]
        env = {**CONTAINER_ENVIRONMENT, **_allowed_only(self.env, self.allow_env)}
        if context.idempotency_key:
            env["RAF_IDEMPOTENCY_KEY"] = context.idempotency_key
        if self._runner is None:
            self._runner = ContainerRunner(box)
        planted: str | None = None
        try:
            user = box.user if box.user is not None else default_user(root)
            outcome = await self._runner.run(
                ["/bin/sh", "-c", args.command],
                mounts=mounts,
                cwd=str(cwd),
                env=env,
                user=user,
                network=network,
                timeout_s=args.timeout_s,
                output_cap=self.output_cap,
                file_bytes=self.process_limits.file_bytes,
            )
        except ContainerEngineError as exc:
            return ToolResult.fail(f"{self.name}: {exc}")
        finally:
            planted = await _finished(guard)  # the container is removed by now
        if planted is not None:
            return _refused_after(planted, outcome)
        value: dict[str, Any] = {
            "exit_code": outcome.exit_code,
            "stdout": outcome.stdout.decode("utf-8", errors="replace"),
            "stderr": outcome.stderr.decode("utf-8", errors="replace"),
            "sandbox": "container",
        }
        notes = list(outcome.notes)
        if network and not box.network:
            notes.append("the container sandbox gives commands no network (network=False)")
        if outcome.stdout_dropped or outcome.stderr_dropped:
            notes.append(
                f"output cut at {self.output_cap} bytes per stream "
                f"({outcome.stdout_dropped} stdout and {outcome.stderr_dropped} stderr bytes "
                "dropped)"
            )
        if notes:
            value["note"] = "; ".join(notes)
        if outcome.timed_out:
            return ToolResult.fail(
                f"command timed out after {args.timeout_s:g}s; its container was killed. "
                f"Partial stdout: {value['stdout'][-2000:]!r}"
            )
        return ToolResult.ok(value)


def _write_approval_reason(scope: WorkspaceScope) -> str:
    """Why every command in `scope` waits for a person: its rules that ask before writing."""
    asking = sorted(
        {
            r.pattern
            for r in scope.rules
            if r.action is RuleAction.APPROVE and r.access & {Access.WRITE, Access.DELETE}
        }
    )
    return (
        f"workspace {scope.name!r} asks a person before a command changes "
        f"{', '.join(repr(p) for p in asking)}, and which paths a command writes is known "
        "only once it ran, so every command needs a person's approval"
    )


async def _finished(guard: CommandGuard | None) -> str | None:
    """The guard's check after a command (shielded: a cancelled call still makes it)."""
    if guard is None:
        return None
    return await asyncio.shield(asyncio.to_thread(guard.finish))


def _refused_after(planted: str, outcome: ProcessOutcome) -> ToolResult:
    """The result of a command that wrote what no command may write."""
    stdout = outcome.stdout.decode("utf-8", errors="replace")
    return ToolResult.fail(
        f"OutsideScope: {planted}. The command exited with {outcome.exit_code}; "
        f"stdout: {stdout[-2000:]!r}"
    )


def _allowed_only(env: Mapping[str, str] | None, allow: Iterable[str]) -> dict[str, str]:
    """The variables named in `allow` (from `env`, else the process's environment)."""
    source = os.environ if env is None else env
    return {name: source[name] for name in allow if name in source}


MAX_PROCESSES = 256
"""Processes a command may add to those its user already runs (RLIMIT_NPROC counts them all)."""


def with_process_cap(limits: ProcessLimits) -> ProcessLimits:
    """`limits` with RLIMIT_NPROC set to the user's current count plus MAX_PROCESSES, when
    the caller did not set it: a fork bomb stops there instead of filling the machine."""
    if limits.processes is not None:
        return limits
    return dataclasses.replace(limits, processes=processes_of_this_user() + MAX_PROCESSES)


def default_process_limits() -> ProcessLimits:
    """rlimits for a command: 4 GiB of address space, 1 GiB per file written, and (set at
    each call, see `process_cap`) MAX_PROCESSES processes more than its user already runs."""
    return ProcessLimits(memory_bytes=4 << 30, file_bytes=1 << 30, open_files=1024)


def has_restricting_rules(scope: WorkspaceScope) -> bool:
    """True when a rule denies or asks before reading, changing or deleting something."""
    return any(
        r.action is not RuleAction.ALLOW and r.access & {Access.READ, Access.WRITE, Access.DELETE}
        for r in scope.rules
    )


async def _guarded(
    scope: WorkspaceScope, approved: bool, inside: str, so: str
) -> CommandGuard | ToolResult:
    """The masks that keep the scope's path rules inside the `inside` (sandbox or
    container); rules that masks cannot carry are the call's failed result."""
    guard = await asyncio.to_thread(CommandGuard.prepare, scope, approved)
    if guard is None:
        return ToolResult.fail(
            "OutsideScope: the workspace's path rules cannot be enforced inside the "
            f"{inside} (more than {MAX_MASKS} paths, or a rule on '/'), so this command {so}"
        )
    return guard


async def _checked_cwd(
    tool: str, scope: WorkspaceScope, cwd: str, approved: bool
) -> Path | ToolResult:
    """The folder a command runs in, checked against the scope; a refusal or a folder that
    is not there is the call's failed result."""

    def check() -> Path:
        with located(scope, cwd, Access.EXECUTE, approved=approved) as loc:
            if not loc.is_dir:
                raise NotADirectoryError(20, f"{cwd!r} is not a folder")
            return loc.path

    try:
        return await asyncio.to_thread(check)
    except OutsideScopeError as exc:
        return ToolResult.fail(str(exc))
    except OSError as exc:
        return ToolResult.fail(f"{tool}: {os_message(exc)}")
