"""WorkspaceScope: policy aliases, resolve_safe, per-path rules and ScopeTool detection."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from raf.core.errors import ConfigurationError
from raf.core.function_tool import tool
from raf.tools.files import ReadFile, file_tools
from raf.tools.workspace import (
    Access,
    PathRule,
    RuleAction,
    ScopePolicy,
    ScopeTool,
    WorkspaceScope,
    glob_to_regex,
    is_scope_tool,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("read", ScopePolicy.ALLOW_ALL),
        ("allow", ScopePolicy.ALLOW_ALL),
        ("allow_all", ScopePolicy.ALLOW_ALL),
        ("approve", ScopePolicy.APPROVE_OUTSIDE),
        ("ask", ScopePolicy.APPROVE_OUTSIDE),
        ("approve_outside", ScopePolicy.APPROVE_OUTSIDE),
        ("Approve-Outside", ScopePolicy.APPROVE_OUTSIDE),
        ("deny", ScopePolicy.DENY_OUTSIDE),
        ("restrict", ScopePolicy.DENY_OUTSIDE),
        ("deny_outside", ScopePolicy.DENY_OUTSIDE),
        (ScopePolicy.ALLOW_ALL, ScopePolicy.ALLOW_ALL),
    ],
)
def test_policy_aliases(value: str, expected: ScopePolicy):
    assert ScopePolicy.parse(value) is expected


def test_unknown_policy_fails_closed_and_logs(caplog: pytest.LogCaptureFixture):
    with caplog.at_level(logging.ERROR, logger="raf.tools.workspace"):
        assert ScopePolicy.parse("yolo") is ScopePolicy.DENY_OUTSIDE
    assert "yolo" in caplog.text and "deny_outside" in caplog.text


def test_default_policy_is_approve_outside(tmp_path: Path):
    assert WorkspaceScope(tmp_path).policy is ScopePolicy.APPROVE_OUTSIDE
    assert WorkspaceScope(tmp_path, policy="nonsense").policy is ScopePolicy.DENY_OUTSIDE


def test_missing_root_is_a_configuration_error(tmp_path: Path):
    with pytest.raises(ConfigurationError, match="not an existing folder"):
        WorkspaceScope(tmp_path / "nope")


def test_resolve_safe_inside_and_outside(tmp_path: Path):
    root = tmp_path / "ws"
    (root / "d").mkdir(parents=True)
    (root / "d" / "f.txt").write_text("x")
    os.symlink("d/f.txt", root / "inner_link")
    os.symlink(str(tmp_path), root / "up")
    scope = WorkspaceScope(root)
    inner = scope.resolve_safe("inner_link")
    assert inner.inside and inner.relative == "d/f.txt" and inner.exists
    assert scope.resolve_safe("d/../d/f.txt").relative == "d/f.txt"
    assert scope.resolve_safe("new/file.txt").inside
    assert not scope.resolve_safe("new/file.txt").exists
    up = scope.resolve_safe("up/other")
    assert not up.inside and "symlink" in up.reason
    assert scope.resolve_safe("up/ws/d").relative == "d"  # back inside: walked again safely
    dotdot = scope.resolve_safe("../x")
    assert not dotdot.inside and dotdot.path == tmp_path / "x"
    assert scope.resolve_safe(str(root / "d")).relative == "d"
    assert scope.resolve_safe(".").relative == "."
    assert scope.resolve_safe("link", follow_final=False).inside


@pytest.mark.parametrize(
    ("path", "fragment"),
    [("a\x00b", "NUL"), ("x" * 5000, "longer"), ("y" * 300, "component"), ("", "empty")],
)
def test_malformed_paths_are_errors(tmp_path: Path, path: str, fragment: str):
    resolved = WorkspaceScope(tmp_path).resolve_safe(path)
    assert resolved.error and not resolved.inside and fragment in resolved.reason


def test_hard_link_counts_as_outside_for_reading(tmp_path: Path):
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "o.txt").write_text("o")
    os.link(tmp_path / "o.txt", root / "h.txt")
    scope = WorkspaceScope(root, policy="deny")
    assert scope.decide("h.txt", Access.READ).action is RuleAction.DENY
    assert scope.decide("h.txt", Access.WRITE).action is RuleAction.ALLOW  # replaced by rename
    approve = WorkspaceScope(root)
    assert approve.decide("h.txt", Access.READ).action is RuleAction.APPROVE


def test_rules_layer_over_the_policy(tmp_path: Path):
    root = tmp_path / "ws"
    (root / "secrets").mkdir(parents=True)
    (root / "build").mkdir()
    (tmp_path / "data").mkdir()
    scope = WorkspaceScope(
        root,
        policy="deny",
        rules=[
            {"path": "secrets/**", "read": "deny", "write": "deny"},
            {"path": "build", "action": "approve", "access": ["delete"]},
            {"path": str(tmp_path / "data"), "read": "allow"},
            PathRule(pattern="*.env", action=RuleAction.DENY),
        ],
    )
    assert scope.decide("secrets/key.pem", Access.READ).action is RuleAction.DENY
    assert scope.decide("SECRETS/key.pem", Access.READ).action is RuleAction.DENY
    assert scope.decide("secrets/key.pem", Access.DELETE).action is RuleAction.ALLOW
    assert scope.decide("build/x.o", Access.DELETE).action is RuleAction.APPROVE
    assert scope.decide("build/x.o", Access.WRITE).action is RuleAction.ALLOW
    assert scope.decide(str(tmp_path / "data" / "f.csv"), Access.READ).action is RuleAction.ALLOW
    assert scope.decide(str(tmp_path / "data" / "f.csv"), Access.WRITE).action is RuleAction.DENY
    assert scope.decide(".env", Access.READ).action is RuleAction.DENY
    assert scope.has_approval_rules
    assert "secrets/**" in scope.describe()


def test_deny_rules_match_unicode_variants(tmp_path: Path):
    scope = WorkspaceScope(tmp_path, rules=[{"path": "café/**", "action": "deny"}])
    nfd = "cafe\u0301/x"
    assert scope.decide(nfd, Access.READ).action is RuleAction.DENY
    assert scope.decide("CAFÉ/x", Access.READ).action is RuleAction.DENY


async def test_deny_rules_match_case_folded_names(tmp_path: Path):
    """`ß` folds to `ss` (no case-insensitive regex sees that): a deny rule on `strasse`
    holds for `Straße`, and for `STRASSE`."""
    from raf.core.tools import ToolContext
    from raf.tools.files import ReadFile

    (tmp_path / "Straße").mkdir()
    (tmp_path / "Straße" / "k").write_text("the key")
    scope = WorkspaceScope(tmp_path, policy="deny", rules=[{"path": "strasse/**", "read": "deny"}])
    assert scope.decide("Straße/k", Access.READ).action is RuleAction.DENY
    assert scope.decide("STRASSE/k", Access.READ).action is RuleAction.DENY
    assert scope.decide("Strasse2/k", Access.READ).action is RuleAction.ALLOW
    read = await ReadFile(scope=scope).invoke({"path": "Straße/k"}, ToolContext())
    assert read.is_error and "the key" not in str(read.value)
    assert "strasse/**" in (read.error or "")


def test_bad_rules_are_configuration_errors(tmp_path: Path):
    with pytest.raises(ConfigurationError, match="needs a 'path'"):
        WorkspaceScope(tmp_path, rules=[{"read": "deny"}])
    with pytest.raises(ConfigurationError, match="actions are"):
        WorkspaceScope(tmp_path, rules=[{"path": "x", "read": "maybe"}])
    with pytest.raises(ConfigurationError, match="says nothing"):
        WorkspaceScope(tmp_path, rules=[{"path": "x"}])
    with pytest.raises(ConfigurationError, match="rule 1 .*mapping"):
        WorkspaceScope(tmp_path, rules=["secrets/**"])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="list of rules"):
        WorkspaceScope(tmp_path, rules=5)  # type: ignore[arg-type]


@pytest.mark.parametrize("root", [123, None, b"/tmp"])
def test_a_root_of_the_wrong_type_is_a_configuration_error(root: object):
    with pytest.raises(ConfigurationError, match="workspace root must be a path"):
        WorkspaceScope(root)  # type: ignore[arg-type]


def test_a_name_must_be_text(tmp_path: Path):
    with pytest.raises(ConfigurationError, match="name"):
        WorkspaceScope(tmp_path, name=None)  # type: ignore[arg-type]


def test_outside_scope_alias():
    from raf.tools.workspace import OutsideScope, OutsideScopeError

    assert OutsideScope is OutsideScopeError


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        ("*.py", "a.py", "d/a.py"),
        ("**/*.py", "d/e/a.py", "a.txt"),
        ("src/**", "src/a/b", "srcx/a"),
        ("a?c", "abc", "a/c"),
        ("[!a]x", "bx", "ax"),
    ],
)
def test_glob_to_regex(pattern: str, yes: str, no: str):
    import re

    regex = re.compile(glob_to_regex(pattern))
    assert regex.fullmatch(yes)
    assert not regex.fullmatch(no)


def test_scope_tool_detection():
    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    assert all(is_scope_tool(t) for t in file_tools())
    assert all(isinstance(t, ScopeTool) for t in file_tools())
    assert not is_scope_tool(echo)
    assert [t.name for t in file_tools()] == [
        "read_file",
        "write_file",
        "edit_file",
        "list_files",
        "inspect_file",
        "make_directory",
        "remove_path",
        "move_file",
        "find_files",
        "search_file",
        "run_command",
    ]
    assert file_tools()[0] is not file_tools()[0]


def test_create_scoped_returns_a_bound_copy(tmp_path: Path):
    unscoped = ReadFile()
    scoped = unscoped.create_scoped(WorkspaceScope(tmp_path, policy="deny"))
    assert scoped is not unscoped and scoped.scope is not None and unscoped.scope is None
    assert not scoped.requires_approval
    assert unscoped.requires_approval  # unscoped: cwd under approve_outside


def test_case_insensitive_filesystems_compare_the_root_casefolded(tmp_path: Path):
    root = tmp_path / "Work"
    root.mkdir()
    (root / "a.txt").write_text("a")
    scope = WorkspaceScope(root)
    assert not scope.case_insensitive  # Linux tmpfs/ext4
    assert not scope.resolve_safe(str(tmp_path / "WORK" / "a.txt")).inside
    scope.case_insensitive = True  # as on macOS / Windows volumes
    resolved = scope.resolve_safe(str(tmp_path / "WORK" / "a.txt"))
    assert resolved.inside and resolved.relative == "a.txt"
