"""Tests of serve/openai/."""
