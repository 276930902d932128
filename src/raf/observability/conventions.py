"""The GenAI semantic-convention names raf writes, and how a client's provider is named.

Written out rather than imported: the conventions' Python package keeps them in an
`_incubating` module that may move between releases; these strings are the contract.
"""

from __future__ import annotations

from typing import Any

from raf.core.guardrails import GUARDRAIL_EVENTS_KEY as GUARDRAIL_EVENTS_KEY

SCHEMA_URL = "https://opentelemetry.io/schemas/1.37.0"

OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
AGENT_DESCRIPTION = "gen_ai.agent.description"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_DESCRIPTION = "gen_ai.tool.description"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
TOKEN_TYPE = "gen_ai.token.type"
ERROR_TYPE = "error.type"

TOKEN_USAGE_METRIC = "gen_ai.client.token.usage"
OPERATION_DURATION_METRIC = "gen_ai.client.operation.duration"
# the bucket boundaries the conventions advise for the two histograms
TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304]
DURATION_BUCKETS = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
]  # fmt: skip

GUARDRAIL_EVENT = "raf.guardrail"

# the conventions' well-known provider names, from the names raf's clients give themselves
_WELL_KNOWN = {
    "openai": "openai",
    "azure": "azure.ai.openai",
    "azure-openai": "azure.ai.openai",
    "anthropic": "anthropic",
    "gemini": "gcp.gemini",
    "ollama": "ollama",
}


def provider_name(client: Any) -> str:
    """The provider a chat client speaks for: its `provider`, looked for through wrappers
    (`.inner`, `.client`); the client's class name when none says."""
    seen: set[int] = set()
    current = client
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        name = getattr(current, "provider", None)
        if isinstance(name, str) and name:
            return _WELL_KNOWN.get(name.lower(), name.lower())
        current = getattr(current, "inner", None) or getattr(current, "client", None)
    return type(client).__name__


def client_model(client: Any) -> str | None:
    """The model a chat client was made for, when it says (`.model`)."""
    seen: set[int] = set()
    current = client
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        model = getattr(current, "model", None)
        if isinstance(model, str) and model:
            return model
        current = getattr(current, "inner", None) or getattr(current, "client", None)
    return None
