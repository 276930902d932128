"""Tests of serve/acp/."""
