"""Skills on demand: Agent Skills folders advertised by name, loaded when the model asks."""

from raf.context.skills.model import Skill, load_skill_folder, load_skills
from raf.context.skills.provider import AgentSkillsProvider
from raf.context.skills.runner import CodeInterpreterRunner, ScriptResult, ScriptRunner

__all__ = [
    "AgentSkillsProvider",
    "CodeInterpreterRunner",
    "ScriptResult",
    "ScriptRunner",
    "Skill",
    "load_skill_folder",
    "load_skills",
]
