"""Path rules: where a glob matches, which rule wins, and the names that must not slip
past a deny (look-alikes, symlinked folders, files at any depth)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from raf.core.tools import ToolContext, ToolResult
from raf.tools.files import ReadFile, SearchFile, WriteFile
from raf.tools.workspace import Access, RuleAction, WorkspaceScope


def _scope(tmp_path: Path, rules: list[dict[str, Any]], policy: str = "deny") -> WorkspaceScope:
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    return WorkspaceScope(root, policy=policy, rules=rules)


async def read(scope: WorkspaceScope, path: str) -> ToolResult:
    result: ToolResult = await ReadFile(scope).invoke({"path": path}, ToolContext())
    return result


def _put(scope: WorkspaceScope, rel: str, text: str = "SECRET\n") -> None:
    target = scope.real_root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


@pytest.mark.parametrize("path", ["prod.pem", "deploy/prod.pem", "a/b/c/d.pem", "x/PROD.PEM"])
async def test_a_pattern_without_slash_matches_at_any_depth(tmp_path: Path, path: str) -> None:
    scope = _scope(tmp_path, [{"path": "*.pem", "read": "deny"}])
    _put(scope, path)
    result = await read(scope, path)
    assert "rule '*.pem' says deny" in (result.error or "")


async def test_a_pattern_with_slash_is_anchored_at_the_root(tmp_path: Path) -> None:
    scope = _scope(tmp_path, [{"path": "secrets/**", "read": "deny"}])
    _put(scope, "secrets/k")
    _put(scope, "docs/secrets/k", "public\n")
    assert "says deny" in ((await read(scope, "secrets/k")).error or "")
    assert (await read(scope, "docs/secrets/k")).value["content"] == "public\n"


@pytest.mark.parametrize("path", ["docs/secret/k", "docs/secret/deeper/k", "./docs/secret/k"])
async def test_the_strictest_rule_wins(tmp_path: Path, path: str) -> None:
    rules = [{"path": "docs/**", "read": "allow"}, {"path": "docs/secret/**", "read": "deny"}]
    scope = _scope(tmp_path, rules)
    _put(scope, "docs/secret/deeper/k")
    _put(scope, "docs/secret/k")
    _put(scope, "docs/readme", "open\n")
    assert "docs/secret/**" in ((await read(scope, path)).error or "")
    assert (await read(scope, "docs/readme")).value["content"] == "open\n"
    decision = scope.decide(path, Access.READ)
    assert decision.action is RuleAction.DENY


@pytest.mark.parametrize(
    "name", ["ｓｅｃｒｅｔｓ/k", "SECRETS/k", "Secrets/k", "ﬆuff/k", "secrets/K"]
)
async def test_look_alikes_do_not_pass_a_deny(tmp_path: Path, name: str) -> None:
    rules = [{"path": "secrets/**", "read": "deny"}, {"path": "stuff/**", "read": "deny"}]
    scope = _scope(tmp_path, rules)
    _put(scope, name)
    result = await read(scope, name)
    assert "says deny" in (result.error or ""), result


async def test_a_rule_on_a_symlinked_folder_name_holds(tmp_path: Path) -> None:
    scope = _scope(tmp_path, [{"path": "keys/**", "read": "deny"}])
    _put(scope, "store/k")
    os.symlink("store", scope.real_root / "keys")
    assert "rule 'keys/**'" in ((await read(scope, "keys/k")).error or "")
    real_rule = _scope(tmp_path, [{"path": "store/**", "read": "deny"}])
    assert "rule 'store/**'" in ((await read(real_rule, "keys/k")).error or "")


async def test_a_rule_on_a_linked_file_name_holds_for_writes(tmp_path: Path) -> None:
    scope = _scope(tmp_path, [{"path": "locked.txt", "write": "deny"}])
    _put(scope, "real.txt", "keep\n")
    os.symlink("real.txt", scope.real_root / "locked.txt")
    result = await WriteFile(scope).invoke({"path": "locked.txt", "content": "x"}, ToolContext())
    assert "says deny" in (result.error or "")
    assert (scope.real_root / "real.txt").read_text() == "keep\n"


@pytest.mark.parametrize("policy", ["allow", "approve", "deny"])
async def test_a_hard_link_of_a_protected_file_is_refused(tmp_path: Path, policy: str) -> None:
    """Under allow_all a hard link is readable (it may point anywhere); a rule protecting
    the file under its first name must still hold under the second."""
    rules = [{"path": "secrets/**", "read": "deny"}, {"path": "pub/**", "read": "allow"}]
    scope = _scope(tmp_path, rules, policy=policy)
    _put(scope, "secrets/k", "TOP-SECRET\n")
    (scope.real_root / "pub").mkdir()
    os.link(scope.real_root / "secrets" / "k", scope.real_root / "pub" / "k")
    result = await read(scope, "pub/k")
    assert "same file as 'secrets/k'" in (result.error or ""), result
    for use_ripgrep in (True, False):
        search = SearchFile(scope, use_ripgrep=use_ripgrep)
        found = await search.invoke({"pattern": "TOP-SECRET"}, ToolContext())
        assert "TOP-SECRET" not in str(found.value), (use_ripgrep, found)


def test_a_bind_mounted_alias_of_a_protected_folder_is_refused(tmp_path: Path) -> None:
    """A bind mount shows `secrets/` again as `alias/` (same inodes, one link each); run in
    a private mount namespace so nothing outside the test sees it."""
    scope = _scope(tmp_path, [{"path": "secrets/**", "read": "deny"}], policy="allow")
    _put(scope, "secrets/k", "TOP-SECRET\n")
    (scope.real_root / "alias").mkdir()
    root = scope.real_root
    code = f"""
import asyncio, json, subprocess
subprocess.run(["mount", "--bind", "{root}/secrets", "{root}/alias"], check=True)
from raf.core.tools import ToolContext
from raf.tools.files import ReadFile, SearchFile
from raf.tools.workspace import WorkspaceScope
scope = WorkspaceScope("{root}", policy="allow", rules=[{{"path": "secrets/**", "read": "deny"}}])
read = asyncio.run(ReadFile(scope).invoke({{"path": "alias/k"}}, ToolContext()))
found = asyncio.run(SearchFile(scope, use_ripgrep=False).invoke(
    {{"pattern": "TOP-SECRET", "path": "alias"}}, ToolContext()))
print(json.dumps([read.value, read.error, found.value, found.error]))
"""
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    value, error, found, _ = json.loads(done.stdout.strip().splitlines()[-1])
    assert value is None and "same file as 'secrets/k'" in error
    assert "TOP-SECRET" not in json.dumps(found)
