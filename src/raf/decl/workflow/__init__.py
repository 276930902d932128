"""Declarative workflows: action lists (set variables, branch, loop, invoke agents and
tools, ask the user) with `=` expressions, compiled and run on the graph engine; and the
workflow documents that hold them: `kind: workflow` with a trigger and actions,
`kind: Workflow` with top-level actions and inputs, and the older graph JSON, loaded with
located problems.

    workflow = build_declarative_workflow([
        {"kind": "SetVariable", "variable": "Local.name", "value": "=System.LastMessage.Text"},
        {"kind": "SendActivity", "activity": '=Concat("Hello, ", Local.name, "!")'},
    ])
    result = await workflow.run("Ada")      # result.outputs == ["Hello, Ada!"]
"""

from raf.decl.documents.document_kind import is_workflow_data
from raf.decl.workflow.builder import DeclWorkflowBuilder
from raf.decl.workflow.loader import (
    LoadedWorkflow,
    is_workflow_file,
    load_workflow,
    load_workflow_dict,
    load_workflow_file,
)
from raf.decl.workflow.node import (
    DeclarativeExecutor,
    build_declarative_workflow,
    check_services,
    close_services,
)
from raf.decl.workflow.program import (
    ACTION_KINDS,
    Issue,
    Program,
    WorkflowDefinitionError,
    compile_actions,
)
from raf.decl.workflow.runtime import (
    ActionError,
    HttpReply,
    HttpRequest,
    HttpRequestHandler,
    Limits,
    Services,
)

__all__ = [
    "ACTION_KINDS",
    "ActionError",
    "DeclWorkflowBuilder",
    "DeclarativeExecutor",
    "HttpReply",
    "HttpRequest",
    "HttpRequestHandler",
    "Issue",
    "Limits",
    "LoadedWorkflow",
    "Program",
    "Services",
    "WorkflowDefinitionError",
    "build_declarative_workflow",
    "check_services",
    "close_services",
    "compile_actions",
    "is_workflow_data",
    "is_workflow_file",
    "load_workflow",
    "load_workflow_dict",
    "load_workflow_file",
]
