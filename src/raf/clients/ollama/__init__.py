"""Ollama's native API (`/api/chat`), and where Ollama listens."""
