"""Tests of serve/mcp/."""
