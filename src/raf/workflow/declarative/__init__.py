"""Declarative workflows: action lists (set variables, branch, loop, invoke agents and
tools, ask the user) with `=` expressions, compiled and run on the graph engine.

    workflow = build_declarative_workflow([
        {"kind": "SetVariable", "variable": "Local.name", "value": "=System.LastMessage.Text"},
        {"kind": "SendActivity", "activity": '=Concat("Hello, ", Local.name, "!")'},
    ])
    result = await workflow.run("Ada")      # result.outputs == ["Hello, Ada!"]
"""

from raf.workflow.declarative.expressions import Expression, ExpressionError
from raf.workflow.declarative.functions import FUNCTIONS
from raf.workflow.declarative.node import (
    DeclarativeExecutor,
    build_declarative_workflow,
    check_services,
    close_services,
)
from raf.workflow.declarative.program import (
    ACTION_KINDS,
    Issue,
    Program,
    WorkflowDefinitionError,
    compile_actions,
)
from raf.workflow.declarative.runtime import (
    ActionError,
    HttpReply,
    HttpRequest,
    HttpRequestHandler,
    Limits,
    Services,
)
from raf.workflow.declarative.variables import VariableError, Variables

__all__ = [
    "ACTION_KINDS",
    "FUNCTIONS",
    "ActionError",
    "DeclarativeExecutor",
    "Expression",
    "ExpressionError",
    "HttpReply",
    "HttpRequest",
    "HttpRequestHandler",
    "Issue",
    "Limits",
    "Program",
    "Services",
    "VariableError",
    "Variables",
    "WorkflowDefinitionError",
    "build_declarative_workflow",
    "check_services",
    "close_services",
    "compile_actions",
]
