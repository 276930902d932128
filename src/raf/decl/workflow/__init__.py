"""Workflow documents: `kind: workflow` with a trigger and actions, `kind: Workflow`
with top-level actions and inputs, and the older graph JSON; loaded with located
problems and built onto the graph engine."""

from raf.decl.document_kind import is_workflow_data
from raf.decl.workflow.builder import DeclWorkflowBuilder
from raf.decl.workflow.loader import (
    LoadedWorkflow,
    is_workflow_file,
    load_workflow,
    load_workflow_dict,
    load_workflow_file,
)
from raf.workflow.declarative.runtime import HttpReply, HttpRequest, HttpRequestHandler

__all__ = [
    "DeclWorkflowBuilder",
    "HttpReply",
    "HttpRequest",
    "HttpRequestHandler",
    "LoadedWorkflow",
    "is_workflow_data",
    "is_workflow_file",
    "load_workflow",
    "load_workflow_dict",
    "load_workflow_file",
]
