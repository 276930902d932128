"""Exposing agents to other programs: HTTP, A2A, ACP and the MCP server."""
