"""The super-brain layout: the pages a new memory folder starts with.

The folder is a skill named `super-brain` in the Agent Skills format, laid out as the
original framework lays it out, so a folder written by one is read by the other: SKILL.md
and the five pages SOUL.md, USER.md, RULES.md, LESSON.md and PREFERENCE.md at its top,
domain notes under assets/. raf adds index.md, log.md and the curator's AGENT.md.
"""

from __future__ import annotations

REFERENCES = {
    "SOUL.md": ("Soul", "who the agent is: its name, role and purpose"),
    "USER.md": ("User", "who the user is: name, work, situation, facts they told"),
    "RULES.md": ("Rules", "standing instructions the user gave"),
    "LESSON.md": ("Lessons", "what worked, what failed, and why"),
    "PREFERENCE.md": ("Preferences", "how the user likes things done"),
}


def page_front_matter(title: str, kind: str) -> str:
    return f"---\ntitle: {title}\ntype: {kind}\nupdated: {{today}}\n---\n"


def _reference(file: str) -> str:
    title, description = REFERENCES[file]
    return page_front_matter(title, "reference") + f"# {title}\n\n_{description.capitalize()}._\n"


INDEX = (
    page_front_matter("Memory index", "index")
    + "# Memory index\n\n"
    + "- [How to read this memory](SKILL.md)\n"
    + "- [Curator rules](AGENT.md)\n"
    + "- [Changelog](log.md)\n\n"
    + "## References\n\n"
    + "".join(f"- [{t}: {d}]({f})\n" for f, (t, d) in REFERENCES.items())
    + "\n## Assets (domain knowledge, one page per topic)\n\n"
)

SKILL = """---
name: super-brain
description: >-
  The agent's persistent memory of its user, its rules and what it learned,
  kept across sessions.
---
# Reading the memory

- Start with `index.md`: it lists every page.
- `USER.md` says who the user is; `PREFERENCE.md` how they like things done; `RULES.md`
  standing instructions; `LESSON.md` what worked and what did not; `SOUL.md` who you are.
- `assets/` holds domain knowledge, one page per topic, listed in the index.
- Struck-through lines (`~~old~~ (superseded DATE)`) are no longer true: the line after
  them replaces them.
- Read only what the task needs. The memory is updated in the background after
  conversations; you do not write it yourself.
"""

AGENT = """---
title: Curator rules
type: rules
updated: {today}
---
# Curator rules

You maintain this memory folder. After each batch of conversation turns you receive
the transcript and update the pages with your tools.

1. Keep only what will matter in later conversations: facts about the user, their
   preferences, standing rules, lessons learned, and durable domain knowledge.
2. Skip small talk, greetings, thanks and anything only relevant to the moment.
3. Merge: before writing a page, read it; add a new fact as one bullet line
   (`- fact`), and do not repeat a fact already there.
4. When a new fact contradicts an old one, never delete the old one: call
   `supersede_fact` with the old text and the new fact. It strikes the old text
   through with today's date (`~~old~~ (superseded YYYY-MM-DD)`) and adds the new one.
5. Facts about the user go to `USER.md`, how they like things done to `PREFERENCE.md`,
   instructions to `RULES.md`, what worked or failed to `LESSON.md`, who the agent is to
   `SOUL.md`. Domain knowledge goes to `assets/<topic>.md`, one page per topic, with
   YAML front matter (title, type: topic).
6. Keep every page's YAML front matter. Write short, plain Markdown.
7. When nothing is worth keeping, change nothing and say so.
"""

LOG = page_front_matter("Changelog", "log") + "# Changelog\n\n"

TEMPLATES: dict[str, str] = {
    "index.md": INDEX,
    "log.md": LOG,
    "SKILL.md": SKILL,
    "AGENT.md": AGENT,
    **{name: _reference(name) for name in REFERENCES},
}
