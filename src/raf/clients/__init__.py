"""Chat clients and their decorators."""

from raf.clients.tool_loop import FunctionInvokingChatClient

__all__ = ["FunctionInvokingChatClient"]
