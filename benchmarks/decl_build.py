"""How long declarative agents take: load + validate + build an agent with 20 tools and 5
contexts, and how fast `raf --help` / `raf validate` start (target: --help under 300 ms).

Run: python benchmarks/decl_build.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from raf.decl import DeclAgentBuilder
from raf.decl.documents.loader import load_file
from raf.testing import ScriptedChatClient

DOCUMENT = """
name: bench
description: 20 tools and 5 contexts
instructions: You are a benchmark.
maxToolRounds: 10
tools:
  - kind: file                      # 10 tools
  - kind: shell                     # 1 tool: run_command
  - kind: web                       # 2 tools
  - kind: code                      # 1 tool
  - {kind: function, name: f1}
  - {kind: function, name: f2}
  - {kind: function, name: f3}
  - {kind: custom, name: c1}
  - {kind: custom, name: c2}
  - {kind: custom, name: c3}
contexts:
  - kind: memory
    config: {directory: memory, consolidationInterval: 3}
  - kind: workspace
    name: project
    config: {root: ., policy: approve}
  - kind: skills
    config: {directory: skills}
  - kind: knowledge
    config: {sources: [docs], mode: tool}
  - kind: compression
    config: {kind: token_budget, budget: 24000}
"""


def _echo(text: str) -> str:
    """Echo the text."""
    return text


def setup(folder: Path) -> Path:
    skill = folder / "skills" / "demo"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: A demo.\n---\nBody.\n")
    (folder / "docs").mkdir()
    (folder / "docs" / "a.md").write_text("# A\n\nSome text about things.\n")
    path = folder / "agent.yaml"
    path.write_text(DOCUMENT, encoding="utf-8")
    return path


def build(path: Path) -> int:
    builder = DeclAgentBuilder().from_yaml_file(path).with_chat_client(ScriptedChatClient([]))
    for name in ("f1", "f2", "f3", "c1", "c2", "c3"):
        builder.register_factory(name, lambda c: _echo)
    agent = builder.build()
    workspace = agent.context_providers[2]
    return len(agent.tools) + len(getattr(workspace, "tools", []))


def timed(fn: object, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        out.append((time.perf_counter() - start) * 1000)
    return out


def command_ms(args: list[str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "raf.cli", *args], capture_output=True, check=False)
        out.append((time.perf_counter() - start) * 1000)
    return out


def report(label: str, samples: list[float]) -> None:
    print(
        f"{label:<44} median {statistics.median(samples):7.1f} ms   "
        f"min {min(samples):7.1f} ms   (n={len(samples)})"
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = setup(Path(tmp))
        count = build(path)  # warm imports once
        assert count == 20, count
        report("load + validate (20 tools, 5 contexts)", timed(lambda: load_file(path), 30))
        report("load + validate + build (20 tools, 5 contexts)", timed(lambda: build(path), 30))
        report("raf --help (new process)", command_ms(["--help"], 10))
        report("raf validate agent.yaml (new process)", command_ms(["validate", str(path)], 10))
        report("python -c pass (interpreter floor)", timed_floor(10))


def timed_floor(runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], capture_output=True, check=False)
        out.append((time.perf_counter() - start) * 1000)
    return out


if __name__ == "__main__":
    main()
