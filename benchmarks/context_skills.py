"""System-prompt tokens with 50 skills: advertised (names + descriptions) vs preloaded.

Fifty skill folders are made from the four real skills in tests/data/agent-skills (each
copied under twelve or thirteen names). One agent gets an `AgentSkillsProvider` over
them; another has every skill's full SKILL.md body pasted into its instructions. The
system prompt each sends to the model is counted; target: at least 90% fewer tokens
when advertised.

    python benchmarks/context_skills.py [--skills 50] [--check]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from raf import AgentBuilder
from raf.context.skills import AgentSkillsProvider, load_skills
from raf.core.tokens import EstimatingCounter, TokenCounter, default_counter
from raf.testing import ScriptedChatClient

REAL = Path(__file__).resolve().parents[1] / "tests" / "data" / "agent-skills"


def make_skills(target: Path, count: int) -> None:
    originals = sorted(p for p in REAL.iterdir() if (p / "SKILL.md").is_file())
    for i in range(count):
        source = originals[i % len(originals)]
        name = f"{source.name}-{i}"
        shutil.copytree(source, target / name)
        text = (target / name / "SKILL.md").read_text(encoding="utf-8")
        (target / name / "SKILL.md").write_text(
            text.replace(f"name: {source.name}", f"name: {name}", 1), encoding="utf-8"
        )


async def system_prompts(folder: Path) -> tuple[str, str]:
    advertised_model = ScriptedChatClient(["ok"])
    advertised = (
        AgentBuilder()
        .with_instructions("You are a helpful assistant.")
        .with_chat_client(advertised_model)
        .with_context_provider(AgentSkillsProvider(folder))
        .build()
    )
    await advertised.run("hello")
    skills, _ = load_skills(folder)
    bodies = "\n\n".join(f"## Skill {s.name}\n{s.description}\n\n{s.instructions}" for s in skills)
    preloaded_model = ScriptedChatClient(["ok"])
    preloaded = (
        AgentBuilder()
        .with_instructions("You are a helpful assistant.")
        .with_instructions(bodies)
        .with_chat_client(preloaded_model)
        .build()
    )
    await preloaded.run("hello")
    return advertised_model.requests[0].system, preloaded_model.requests[0].system


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=50)
    parser.add_argument("--check", action="store_true", help="exit 1 if the target is missed")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="raf-bench-skills-") as tmp:
        make_skills(Path(tmp), args.skills)
        advertised, preloaded = asyncio.run(system_prompts(Path(tmp)))
    counters: list[tuple[str, TokenCounter]] = [("estimate", EstimatingCounter())]
    exact = default_counter()
    if not isinstance(exact, EstimatingCounter):
        counters.append(("tiktoken", exact))
    ok = True
    for label, counter in counters:
        a, p = counter.count(advertised), counter.count(preloaded)
        saving = 1 - a / p
        ok = ok and saving >= 0.90
        print(
            f"{args.skills} skills ({label}): advertised {a:,} tokens, preloaded {p:,} tokens, "
            f"saving {saving:.1%}"
        )
    print("target (≥ 90% fewer):", "met" if ok else "MISSED")
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
