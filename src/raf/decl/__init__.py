"""Declarative agents: YAML/JSON/TOML documents, their schema, and the builder that links them."""

from raf.decl.builder import DeclAgentBuilder, ToolFactory, ToolFactoryContext
from raf.decl.loader import LoadedAgent, load, load_dict, load_file
from raf.decl.schema import AgentDecl, json_schema

__all__ = [
    "AgentDecl",
    "DeclAgentBuilder",
    "LoadedAgent",
    "ToolFactory",
    "ToolFactoryContext",
    "json_schema",
    "load",
    "load_dict",
    "load_file",
]
