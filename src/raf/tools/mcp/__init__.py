"""MCP servers as raf tools: config, client (on the official `mcp` SDK) and toolset."""

from raf.tools.mcp.client import McpClient, McpError
from raf.tools.mcp.config import McpServerConfig
from raf.tools.mcp.interaction import (
    ElicitationAnswer,
    ElicitationRequest,
    McpNotice,
    SamplingAnswer,
    SamplingRequest,
)
from raf.tools.mcp.tools import McpTool, McpToolset, content_to_value, result_to_tool_result

__all__ = [
    "ElicitationAnswer",
    "ElicitationRequest",
    "McpClient",
    "McpError",
    "McpNotice",
    "McpServerConfig",
    "McpTool",
    "McpToolset",
    "SamplingAnswer",
    "SamplingRequest",
    "content_to_value",
    "result_to_tool_result",
]
