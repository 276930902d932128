"""Anthropic's Messages API (Claude, and servers that speak the same API)."""
