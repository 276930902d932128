"""The OpenAI-compatible HTTP API: Chat Completions (`chat`) and the Responses API
(`responses`), both on the one host."""
