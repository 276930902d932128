"""Declarative agents and workflows: YAML/JSON/TOML documents, their schema, and the
builders that link them."""

from raf.decl.agent.builder import DeclAgentBuilder, ToolFactory, ToolFactoryContext
from raf.decl.documents.loader import LoadedAgent, load, load_dict, load_file
from raf.decl.documents.schema import AgentDecl, json_schema
from raf.decl.workflow import DeclWorkflowBuilder, LoadedWorkflow, load_workflow_file

__all__ = [
    "AgentDecl",
    "DeclAgentBuilder",
    "DeclWorkflowBuilder",
    "LoadedAgent",
    "LoadedWorkflow",
    "ToolFactory",
    "ToolFactoryContext",
    "json_schema",
    "load",
    "load_dict",
    "load_file",
    "load_workflow_file",
]
