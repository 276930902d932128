"""Workspace scope: where an agent's file tools may act, and what happens outside it."""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from raf.core.errors import ConfigurationError, ToolExecutionError
from raf.core.tools import Tool
from raf.tools.scope.path_rules import (
    _STRICTNESS,
    Access,
    PathRule,
    RuleAction,
    _CompiledRule,
    glob_to_regex,
)
from raf.tools.scope.paths import (
    GIT_CODE_PATHS,
    MAX_NAME_BYTES,
    MAX_PATH_CHARS,
    Decision,
    ResolvedPath,
    _check_text,
    _is_case_insensitive,
    _outside,
    outside_path,
)
from raf.tools.scope.policy import ScopePolicy
from raf.tools.scope.runs_later import creates_vcs_folder, runs_code_later
from raf.tools.scope.walk import WalkEscape, WalkResult, root_relative, walk

__all__ = [
    "GIT_CODE_PATHS",
    "MAX_NAME_BYTES",
    "MAX_PATH_CHARS",
    "Access",
    "Decision",
    "OutsideScope",
    "OutsideScopeError",
    "PathRule",
    "ResolvedPath",
    "RuleAction",
    "ScopePolicy",
    "ScopeTool",
    "WorkspaceScope",
    "glob_to_regex",
    "is_scope_tool",
    "outside_path",
]


class OutsideScopeError(ToolExecutionError):
    """A call's path leaves the workspace (or hits a deny rule) and may not proceed."""

    def __init__(self, message: str) -> None:
        super().__init__(f"OutsideScope: {message}")


OutsideScope = OutsideScopeError
"""Another name for the refusal (`OutsideScope: …` is how its message starts)."""


@dataclass(slots=True)
class WorkspaceScope:
    """A root folder, a name, a policy for paths outside it, and optional per-path rules."""

    root: Path
    name: str = "workspace"
    policy: ScopePolicy = ScopePolicy.APPROVE_OUTSIDE
    rules: Sequence[PathRule] = ()
    real_root: Path = field(init=False)
    case_insensitive: bool = field(init=False)
    _compiled: list[_CompiledRule] = field(init=False, repr=False)

    def __init__(
        self,
        root: str | os.PathLike[str],
        name: str = "workspace",
        policy: ScopePolicy | str = ScopePolicy.APPROVE_OUTSIDE,
        rules: Iterable[PathRule | Mapping[str, Any]] = (),
    ) -> None:
        if not isinstance(root, str | os.PathLike) or isinstance(root, bytes):
            raise ConfigurationError(
                f"workspace root must be a path (text or os.PathLike), not {type(root).__name__}"
            )
        if not isinstance(name, str):
            raise ConfigurationError(
                f"workspace name must be text, not {type(name).__name__} ({name!r})"
            )
        raw = os.fspath(root)
        if not isinstance(raw, str):
            raise ConfigurationError(f"workspace root must be a text path, not {raw!r}")
        given = Path(os.path.expanduser(raw))
        if not given.is_absolute():
            given = Path.cwd() / given
        real = Path(os.path.realpath(given))
        if not real.is_dir():
            raise ConfigurationError(f"workspace root {str(given)!r} is not an existing folder")
        self.root = given
        self.name = name
        self.policy = ScopePolicy.parse(policy)
        if isinstance(rules, str | bytes | Mapping) or not isinstance(rules, Iterable):
            raise ConfigurationError(
                f"workspace {name!r}: 'rules' must be a list of rules, not {type(rules).__name__}"
            )
        parsed: list[PathRule] = []
        for index, rule in enumerate(rules, 1):
            if not isinstance(rule, PathRule | Mapping):
                raise ConfigurationError(
                    f"workspace {name!r}: rule {index} must be a mapping such as "
                    f"{{path: 'secrets/**', read: deny}}, not {rule!r}"
                )
            parsed.extend(PathRule.parse(rule))
        self.rules = tuple(parsed)
        self.real_root = real
        self.case_insensitive = _is_case_insensitive(real)
        self._compiled = [self._compile(r) for r in self.rules]

    # -- resolution -------------------------------------------------------------------

    def resolve_safe(
        self, path: str | os.PathLike[str], *, follow_final: bool = True
    ) -> ResolvedPath:
        """Resolve `path` against the root without following anything out of it.

        With `follow_final=False` a final symlink is judged by where it sits, not where it
        points (remove_path and move_file act on the link itself).
        """
        text = os.fspath(path)
        problem = _check_text(text)
        if problem:
            return ResolvedPath(inside=False, path=self.real_root, reason=problem, error=True)
        if text.startswith("~"):
            text = os.path.expanduser(text)
        try:
            parts = self.relative_parts(text)
            if parts is None:
                where = outside_path(text, follow_final)
                return _outside(where, "the path is outside the workspace")
        except OSError as exc:  # realpath could not look (e.g. /proc/1/root as non-owner)
            return ResolvedPath(
                inside=False, path=self.real_root, reason=f"cannot resolve: {exc}", error=True
            )
        try:
            root_fd = os.open(self.real_root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            return ResolvedPath(
                inside=False, path=self.real_root, reason=f"workspace root: {exc}", error=True
            )
        try:
            result = self.walk_parts(root_fd, parts, follow_final=follow_final)
        except WalkEscape as esc:
            os.close(root_fd)
            joined = os.path.join(self.real_root, *parts)
            try:
                return _outside(outside_path(joined, follow_final), esc.reason)
            except OSError as exc:
                return ResolvedPath(
                    inside=False, path=self.real_root, reason=f"{esc.reason} ({exc})", error=True
                )
        except OSError as exc:
            os.close(root_fd)
            return ResolvedPath(inside=False, path=self.real_root, reason=str(exc), error=True)
        try:
            links = 1
            if result.stat is not None and not stat.S_ISDIR(result.stat.st_mode):
                links = result.stat.st_nlink
            rel = "/".join(result.rel) or "."
            return ResolvedPath(
                inside=True,
                path=self.real_root.joinpath(*result.rel),
                relative=rel,
                exists=result.stat is not None,
                links=links,
                reason="inside the workspace",
            )
        finally:
            result.close()
            os.close(root_fd)

    def walk_parts(
        self,
        root_fd: int,
        parts: list[str],
        *,
        follow_final: bool = True,
        create_dirs: bool = False,
    ) -> WalkResult:
        """The race-safe walk of `parts` below the root. A '..' that leaves the root
        mid-way (as in `sub/../../ws/x` with the root named ws) is given one second chance:
        if the kernel's resolution lands inside, that target is walked safely instead."""
        try:
            return walk(
                root_fd,
                parts,
                self.root_prefixes(),
                follow_final=follow_final,
                create_dirs=create_dirs,
                fold=self.case_insensitive,
            )
        except WalkEscape:
            joined = os.path.join(self.real_root, *parts)
            try:
                real = outside_path(joined, follow_final)
            except OSError:
                raise WalkEscape("the path leaves the workspace") from None
            root = str(self.real_root)
            if str(real) == root or str(real).startswith(root.rstrip("/") + "/"):
                again = str(real)[len(root) :].split("/")
                if ".." not in again:
                    return walk(
                        root_fd,
                        again,
                        self.root_prefixes(),
                        follow_final=follow_final,
                        create_dirs=create_dirs,
                        fold=self.case_insensitive,
                    )
            raise

    def relative_parts(self, text: str) -> list[str] | None:
        """Components of `text` below the root, or None for an absolute path outside it."""
        if not text.startswith("/"):
            return text.split("/")
        parts = text.split("/")
        sub = root_relative(parts, self.root_prefixes(), fold=self.case_insensitive)
        if sub is not None:
            return sub
        real = os.path.realpath(text)
        root = str(self.real_root).rstrip("/")
        head, rest = real[: len(root)], real[len(root) :]
        same = head.casefold() == root.casefold() if self.case_insensitive else head == root
        if same and (rest == "" or rest.startswith("/")):
            return rest.split("/")
        return None

    def root_prefixes(self) -> list[list[str]]:
        out = [str(self.real_root).split("/")]
        given = str(self.root).rstrip("/").split("/")
        if given != out[0]:
            out.append(given)
        return out

    # -- decisions --------------------------------------------------------------------

    def decide(
        self, path: str | os.PathLike[str], access: Access, *, follow_final: bool = True
    ) -> Decision:
        """Allow, approve or deny one access: policy first, then the strictest matching rule."""
        resolved = self.resolve_safe(path, follow_final=follow_final)
        decision = self.decide_resolved(resolved, access)
        given = self._given_relative(os.fspath(path)) if resolved.inside else None
        if given is None or given == resolved.relative:
            return decision
        # the name as written passes through a symlink: a rule on that name holds too
        alias = ResolvedPath(
            inside=True, path=self.real_root / given, relative=given, exists=resolved.exists
        )
        matched = self._match_rules(alias, access)
        if matched is None or _STRICTNESS[matched[0]] <= _STRICTNESS[decision.action]:
            return decision
        action, pattern = matched
        reason = f"rule {pattern!r} says {action.value} for {access.value} (the name as given)"
        return Decision(action=action, resolved=resolved, access=access, reason=reason)

    def _given_relative(self, text: str) -> str | None:
        """The path as written, relative to the root and without '.'/'..', or None."""
        if _check_text(text):
            return None
        if text.startswith("~"):
            text = os.path.expanduser(text)
        try:
            parts = self.relative_parts(text)
        except OSError:
            return None
        if parts is None:
            return None
        joined = os.path.normpath("/".join(p for p in parts if p) or ".")
        if joined == ".." or joined.startswith("../"):
            return None
        return joined

    def decide_resolved(self, resolved: ResolvedPath, access: Access) -> Decision:
        if resolved.error:
            return Decision(
                action=RuleAction.DENY, resolved=resolved, access=access, reason=resolved.reason
            )
        outside = not resolved.inside
        reason = resolved.reason
        if resolved.inside and access is Access.READ and resolved.links > 1:
            outside = True
            reason = (
                f"the file has {resolved.links} hard links; raf cannot prove the other names "
                "are inside the workspace, so reading it counts as outside"
            )
        if not outside or self.policy is ScopePolicy.ALLOW_ALL:
            action = RuleAction.ALLOW
        elif self.policy is ScopePolicy.APPROVE_OUTSIDE:
            action = RuleAction.APPROVE
        else:
            action = RuleAction.DENY
        matched = self._match_rules(resolved, access)
        if matched is not None:
            action, pattern = matched
            reason = f"rule {pattern!r} says {action.value} for {access.value}"
        if access in (Access.WRITE, Access.DELETE) and self.runs_code_later(resolved):
            action = RuleAction.DENY
            reason = (
                "a tool on the user's machine runs this path's content later without asking "
                "(git's .git config and hooks, a new .git or .hg folder, .envrc, .vscode, "
                ".idea), so raf's tools never change them (nor create them)"
            )
        return Decision(action=action, resolved=resolved, access=access, reason=reason)

    def runs_code_later(self, resolved: ResolvedPath) -> bool:
        """True when `resolved` is a path no tool may write or delete (see
        `raf.tools.scope.runs_later`): one that runs code later, or a path whose writing
        would create a version-control folder first."""
        if not resolved.inside or resolved.relative is None:
            return False
        rel = resolved.relative
        return runs_code_later(rel) or creates_vcs_folder(self.real_root, rel)

    def _match_rules(self, resolved: ResolvedPath, access: Access) -> tuple[RuleAction, str] | None:
        best: tuple[RuleAction, str] | None = None
        for compiled in self._compiled:
            rule = compiled.rule
            if access not in rule.access:
                continue
            if compiled.absolute:
                subject = str(resolved.path)
            elif resolved.inside and resolved.relative is not None:
                subject = resolved.relative
            else:
                continue
            if not self._rule_matches(compiled, subject, strict=rule.action is RuleAction.ALLOW):
                continue
            if best is None or _STRICTNESS[rule.action] > _STRICTNESS[best[0]]:
                best = (rule.action, rule.pattern)
        return best

    def _rule_matches(self, compiled: _CompiledRule, subject: str, *, strict: bool) -> bool:
        """Allow rules match the exact (NFC) name; deny/approve also match Unicode and
        case variants, so a look-alike name cannot slip past them."""
        variants = {unicodedata.normalize("NFC", subject)}
        if not strict:
            variants |= {subject, unicodedata.normalize("NFKC", subject)}
            variants |= {v.casefold() for v in list(variants)}
        elif self.case_insensitive:
            variants |= {v.casefold() for v in list(variants)}
        candidates: set[str] = set()
        for v in variants:
            pieces = v.split("/")
            candidates.update("/".join(pieces[: i + 1]) for i in range(len(pieces)))
        return any(compiled.regex.fullmatch(c) for c in candidates)

    def _compile(self, rule: PathRule) -> _CompiledRule:
        pattern = os.path.expanduser(rule.pattern)
        absolute = pattern.startswith("/")
        if absolute:
            sub = root_relative(pattern.split("/"), self.root_prefixes())
            if sub is not None:
                pattern, absolute = "/".join(p for p in sub if p) or ".", False
        pattern = unicodedata.normalize("NFC", pattern.strip("/") if not absolute else pattern)
        anywhere = not absolute and "/" not in pattern and pattern not in (".", "**")
        flags = re.IGNORECASE if rule.action is not RuleAction.ALLOW or self.case_insensitive else 0
        return _CompiledRule(
            rule=rule,
            regex=re.compile(("(?:.*/)?" if anywhere else "") + glob_to_regex(pattern), flags),
            absolute=absolute,
        )

    def rule_action(self, relative: str, access: Access) -> RuleAction | None:
        """What the strictest rule matching `relative` (a path below the root, POSIX
        separators) says for `access`; None when no rule matches."""
        where = ResolvedPath(
            inside=True, path=self.real_root / relative, relative=relative, exists=True
        )
        found = self._match_rules(where, access)
        return found[0] if found is not None else None

    def restricts(self, accesses: Iterable[Access]) -> bool:
        """True when some rule denies or asks for one of `accesses`."""
        wanted = set(accesses)
        return any(r.action is not RuleAction.ALLOW and r.access & wanted for r in self.rules)

    @property
    def has_approval_rules(self) -> bool:
        return any(r.action is RuleAction.APPROVE for r in self.rules)

    def describe(self) -> str:
        """One paragraph for the model: the root, the policy and the rules."""
        meaning = {
            ScopePolicy.ALLOW_ALL: "paths outside it are allowed",
            ScopePolicy.APPROVE_OUTSIDE: "a call touching a path outside it waits for a "
            "human's approval",
            ScopePolicy.DENY_OUTSIDE: "paths outside it are refused (OutsideScope)",
        }[self.policy]
        text = (
            f"Workspace {self.name!r} is rooted at {self.real_root}; relative paths are "
            f"resolved against it. Policy: {self.policy.value} — {meaning}."
        )
        if self.rules:
            listed = "; ".join(
                f"{r.pattern}: {r.action.value} {'/'.join(sorted(a.value for a in r.access))}"
                for r in self.rules
            )
            text += f" Path rules: {listed}."
        return text

    def __repr__(self) -> str:
        return f"WorkspaceScope({str(self.real_root)!r}, name={self.name!r}, policy={self.policy})"


@runtime_checkable
class ScopeTool(Tool, Protocol):
    """A tool that can be bound to a workspace: `create_scoped(scope)` returns the bound copy."""

    def create_scoped(self, scope: WorkspaceScope) -> Tool: ...


def is_scope_tool(tool: object) -> bool:
    """True when `tool` can be bound to a workspace scope."""
    return isinstance(tool, Tool) and callable(getattr(tool, "create_scoped", None))
