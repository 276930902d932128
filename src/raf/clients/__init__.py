"""Chat clients and their decorators."""

from raf.clients.function_invoking import FunctionInvokingChatClient

__all__ = ["FunctionInvokingChatClient"]
