"""raf: a typed, async-first framework for building LLM agents.

The names below are the public contract (checked by a test). Heavier parts load on
first use, so `import raf` stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from raf._version import __version__ as __version__

_EXPORTS: dict[str, str] = {
    # core types
    "AgentResponse": "raf.core.responses",
    "AgentResponseUpdate": "raf.core.responses",
    "ChatResponse": "raf.core.responses",
    "FinishReason": "raf.core.responses",
    "UpdateKind": "raf.core.responses",
    "fold_updates": "raf.core.responses",
    "fold_stream": "raf.core.responses",
    "ChatMessage": "raf.core.messages",
    "Role": "raf.core.messages",
    "TextContent": "raf.core.contents",
    "ReasoningContent": "raf.core.contents",
    "FunctionCallContent": "raf.core.contents",
    "FunctionResultContent": "raf.core.contents",
    "ApprovalRequestContent": "raf.core.contents",
    "ApprovalResponseContent": "raf.core.contents",
    "UsageContent": "raf.core.contents",
    "ErrorContent": "raf.core.contents",
    "DataContent": "raf.core.contents",
    "UsageDetails": "raf.core.usage",
    "UsageLimits": "raf.core.usage",
    "RunContext": "raf.core.run_context",
    "GuardrailResult": "raf.core.guardrails",
    "GuardrailTripped": "raf.core.guardrails",
    "InputGuardrailTripped": "raf.core.guardrails",
    "OutputGuardrailTripped": "raf.core.guardrails",
    "ToolGuardrail": "raf.agent.guardrails",
    "register_guardrail": "raf.agent.guardrails",
    "AgentRunContext": "raf.core.middleware",
    "ChatContext": "raf.core.middleware",
    "FunctionInvocationContext": "raf.core.middleware",
    "AgentMiddleware": "raf.core.middleware",
    "ChatMiddleware": "raf.core.middleware",
    "FunctionMiddleware": "raf.core.middleware",
    "agent_middleware": "raf.core.middleware",
    "chat_middleware": "raf.core.middleware",
    "function_middleware": "raf.core.middleware",
    "register_middleware": "raf.core.middleware",
    "AgentRunOptions": "raf.core.options",
    "ChatOptions": "raf.core.options",
    "ToolApprovalResponse": "raf.core.options",
    "AgentSession": "raf.core.sessions",
    "SessionStore": "raf.core.sessions",
    "CancellationToken": "raf.core.cancellation",
    "ContextProvider": "raf.core.context",
    "ContextResult": "raf.core.context",
    "BaseContextProvider": "raf.core.context",
    "ChatClient": "raf.core.chat_client",
    "ChatClientBuilder": "raf.core.chat_client",
    "Tool": "raf.core.tools",
    "BaseTool": "raf.core.tools",
    "ToolContext": "raf.core.tools",
    "ToolResult": "raf.core.tools",
    "ApprovalRequiredTool": "raf.core.tools",
    "tool": "raf.core.function_tool",
    "FunctionTool": "raf.core.function_tool",
    # errors
    "RafError": "raf.core.errors",
    "ConfigurationError": "raf.core.errors",
    "MissingExtraError": "raf.core.errors",
    "ModelError": "raf.core.errors",
    "OutputValidationError": "raf.core.errors",
    "ModelRetry": "raf.core.errors",
    "PromptTemplate": "raf.agent.template",
    "ToolDefinitionError": "raf.core.errors",
    "ToolExecutionError": "raf.core.errors",
    "ApprovalError": "raf.core.errors",
    "ApprovalAlreadyClaimed": "raf.core.errors",
    "UsageLimitExceeded": "raf.core.errors",
    "ProviderError": "raf.core.errors",
    "SessionError": "raf.core.errors",
    "SessionFormatError": "raf.core.errors",
    "SessionNotFoundError": "raf.core.errors",
    "SessionConflictError": "raf.core.errors",
    "ToolApprovalPending": "raf.core.errors",
    "ValidationProblems": "raf.core.errors",
    "Problem": "raf.core.errors",
    # declarative agents
    "DeclAgentBuilder": "raf.decl.agent.builder",
    # agent layer
    "AgentTool": "raf.agent.agent_tool",
    "Agent": "raf.agent.agent",
    "AgentBuilder": "raf.agent.builder",
    "InMemoryHistoryProvider": "raf.agent.history",
    # session stores
    "InMemorySessionStore": "raf.stores.sessions",
    "JsonDirectorySessionStore": "raf.stores.sessions",
    "SqliteSessionStore": "raf.stores.sessions",
    "PostgresSessionStore": "raf.stores.postgres_sessions",
    "RedisSessionStore": "raf.stores.redis_sessions",
    # clients
    "FunctionInvokingChatClient": "raf.agent.run",
    "OpenAIChatClient": "raf.clients.openai.client",
    "OpenAIResponsesClient": "raf.clients.openai.responses",
    "AnthropicChatClient": "raf.clients.anthropic.client",
    "GeminiChatClient": "raf.clients.gemini.client",
    "LocalChatClient": "raf.clients.local.client",
    "RetryingChatClient": "raf.clients.retry",
    "resolve_model": "raf.clients.models",
    "model_info": "raf.clients.models",
    "ModelInfo": "raf.clients.models",
    "ModelSpec": "raf.clients.models",
    "parse_model_spec": "raf.clients.models",
    "register_model_info": "raf.clients.models",
    # context: skills, compression, memory
    "AgentSkillsProvider": "raf.context.skills",
    "Skill": "raf.context.skills",
    "CompressionProvider": "raf.context.compression",
    "CompressionPipeline": "raf.context.compression",
    "CompressionStrategy": "raf.context.compression",
    "SlidingWindowStrategy": "raf.context.compression",
    "TokenBudgetStrategy": "raf.context.compression",
    "ObservationMaskingStrategy": "raf.context.compression",
    "SummarizationStrategy": "raf.context.compression",
    "SuperBrainContextProvider": "raf.context.memory",
    # context and tools: knowledge, wiki, MCP, OpenAPI
    "KnowledgeProvider": "raf.context.knowledge",
    "WikiProvider": "raf.context.wiki",
    "McpContextProvider": "raf.context.mcp",
    "McpServerConfig": "raf.tools.mcp",
    "McpToolset": "raf.tools.mcp",
    "OpenApiToolset": "raf.tools.openapi",
    # workspace and built-in tools
    "ScopePolicy": "raf.tools.workspace",
    "ScopeTool": "raf.tools.workspace",
    "WorkspaceScope": "raf.tools.workspace",
    "WorkspaceContextProvider": "raf.context.workspace",
    "file_tools": "raf.tools.files",
    "CodeInterpreter": "raf.tools.code",
    "WebFetch": "raf.tools.web",
    "WebSearch": "raf.tools.web",
    "ToolResolver": "raf.decl.agent.tool_resolver",
}

__all__ = [
    "Agent",
    "AgentBuilder",
    "AgentMiddleware",
    "AgentResponse",
    "AgentResponseUpdate",
    "AgentRunContext",
    "AgentRunOptions",
    "AgentSession",
    "AgentSkillsProvider",
    "AgentTool",
    "AnthropicChatClient",
    "ApprovalAlreadyClaimed",
    "ApprovalError",
    "ApprovalRequestContent",
    "ApprovalRequiredTool",
    "ApprovalResponseContent",
    "BaseContextProvider",
    "BaseTool",
    "CancellationToken",
    "ChatClient",
    "ChatClientBuilder",
    "ChatContext",
    "ChatMessage",
    "ChatMiddleware",
    "ChatOptions",
    "ChatResponse",
    "CodeInterpreter",
    "CompressionPipeline",
    "CompressionProvider",
    "CompressionStrategy",
    "ConfigurationError",
    "ContextProvider",
    "ContextResult",
    "DataContent",
    "DeclAgentBuilder",
    "ErrorContent",
    "FinishReason",
    "FunctionCallContent",
    "FunctionInvocationContext",
    "FunctionInvokingChatClient",
    "FunctionMiddleware",
    "FunctionResultContent",
    "FunctionTool",
    "GeminiChatClient",
    "GuardrailResult",
    "GuardrailTripped",
    "InMemoryHistoryProvider",
    "InMemorySessionStore",
    "InputGuardrailTripped",
    "JsonDirectorySessionStore",
    "KnowledgeProvider",
    "LocalChatClient",
    "McpContextProvider",
    "McpServerConfig",
    "McpToolset",
    "MissingExtraError",
    "ModelError",
    "ModelInfo",
    "ModelRetry",
    "ModelSpec",
    "ObservationMaskingStrategy",
    "OpenAIChatClient",
    "OpenAIResponsesClient",
    "OpenApiToolset",
    "OutputGuardrailTripped",
    "OutputValidationError",
    "PostgresSessionStore",
    "Problem",
    "PromptTemplate",
    "ProviderError",
    "RafError",
    "ReasoningContent",
    "RedisSessionStore",
    "RetryingChatClient",
    "Role",
    "RunContext",
    "ScopePolicy",
    "ScopeTool",
    "SessionConflictError",
    "SessionError",
    "SessionFormatError",
    "SessionNotFoundError",
    "SessionStore",
    "Skill",
    "SlidingWindowStrategy",
    "SqliteSessionStore",
    "SummarizationStrategy",
    "SuperBrainContextProvider",
    "TextContent",
    "TokenBudgetStrategy",
    "Tool",
    "ToolApprovalPending",
    "ToolApprovalResponse",
    "ToolContext",
    "ToolDefinitionError",
    "ToolExecutionError",
    "ToolGuardrail",
    "ToolResolver",
    "ToolResult",
    "UpdateKind",
    "UsageContent",
    "UsageDetails",
    "UsageLimitExceeded",
    "UsageLimits",
    "ValidationProblems",
    "WebFetch",
    "WebSearch",
    "WikiProvider",
    "WorkspaceContextProvider",
    "WorkspaceScope",
    "agent_middleware",
    "chat_middleware",
    "file_tools",
    "fold_stream",
    "fold_updates",
    "function_middleware",
    "model_info",
    "parse_model_spec",
    "register_guardrail",
    "register_middleware",
    "register_model_info",
    "resolve_model",
    "tool",
]

if TYPE_CHECKING:
    from raf.agent.agent import Agent
    from raf.agent.agent_tool import AgentTool
    from raf.agent.builder import AgentBuilder
    from raf.agent.guardrails import ToolGuardrail, register_guardrail
    from raf.agent.history import InMemoryHistoryProvider
    from raf.agent.run import FunctionInvokingChatClient
    from raf.agent.template import PromptTemplate
    from raf.clients.anthropic.client import AnthropicChatClient
    from raf.clients.gemini.client import GeminiChatClient
    from raf.clients.local.client import LocalChatClient
    from raf.clients.models import (
        ModelInfo,
        ModelSpec,
        model_info,
        parse_model_spec,
        register_model_info,
        resolve_model,
    )
    from raf.clients.openai.client import OpenAIChatClient
    from raf.clients.openai.responses import OpenAIResponsesClient
    from raf.clients.retry import RetryingChatClient
    from raf.context.compression import (
        CompressionPipeline,
        CompressionProvider,
        CompressionStrategy,
        ObservationMaskingStrategy,
        SlidingWindowStrategy,
        SummarizationStrategy,
        TokenBudgetStrategy,
    )
    from raf.context.knowledge import KnowledgeProvider
    from raf.context.mcp import McpContextProvider
    from raf.context.memory import SuperBrainContextProvider
    from raf.context.skills import AgentSkillsProvider, Skill
    from raf.context.wiki import WikiProvider
    from raf.context.workspace import WorkspaceContextProvider
    from raf.core.cancellation import CancellationToken
    from raf.core.chat_client import ChatClient, ChatClientBuilder
    from raf.core.contents import (
        ApprovalRequestContent,
        ApprovalResponseContent,
        DataContent,
        ErrorContent,
        FunctionCallContent,
        FunctionResultContent,
        ReasoningContent,
        TextContent,
        UsageContent,
    )
    from raf.core.context import BaseContextProvider, ContextProvider, ContextResult
    from raf.core.errors import (
        ApprovalAlreadyClaimed,
        ApprovalError,
        ConfigurationError,
        MissingExtraError,
        ModelError,
        ModelRetry,
        OutputValidationError,
        Problem,
        ProviderError,
        RafError,
        SessionConflictError,
        SessionError,
        SessionFormatError,
        SessionNotFoundError,
        ToolApprovalPending,
        ToolDefinitionError,
        ToolExecutionError,
        UsageLimitExceeded,
        ValidationProblems,
    )
    from raf.core.function_tool import FunctionTool, tool
    from raf.core.guardrails import (
        GuardrailResult,
        GuardrailTripped,
        InputGuardrailTripped,
        OutputGuardrailTripped,
    )
    from raf.core.messages import ChatMessage, Role
    from raf.core.middleware import (
        AgentMiddleware,
        AgentRunContext,
        ChatContext,
        ChatMiddleware,
        FunctionInvocationContext,
        FunctionMiddleware,
        agent_middleware,
        chat_middleware,
        function_middleware,
        register_middleware,
    )
    from raf.core.options import AgentRunOptions, ChatOptions, ToolApprovalResponse
    from raf.core.responses import (
        AgentResponse,
        AgentResponseUpdate,
        ChatResponse,
        FinishReason,
        UpdateKind,
        fold_stream,
        fold_updates,
    )
    from raf.core.run_context import RunContext
    from raf.core.sessions import AgentSession, SessionStore
    from raf.core.tools import ApprovalRequiredTool, BaseTool, Tool, ToolContext, ToolResult
    from raf.core.usage import UsageDetails, UsageLimits
    from raf.decl.agent.builder import DeclAgentBuilder
    from raf.decl.agent.tool_resolver import ToolResolver
    from raf.stores.postgres_sessions import PostgresSessionStore
    from raf.stores.redis_sessions import RedisSessionStore
    from raf.stores.sessions import (
        InMemorySessionStore,
        JsonDirectorySessionStore,
        SqliteSessionStore,
    )
    from raf.tools.code import CodeInterpreter
    from raf.tools.files import file_tools
    from raf.tools.mcp import McpServerConfig, McpToolset
    from raf.tools.openapi import OpenApiToolset
    from raf.tools.web import WebFetch, WebSearch
    from raf.tools.workspace import ScopePolicy, ScopeTool, WorkspaceScope


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'raf' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
