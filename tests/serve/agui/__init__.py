"""Tests of serve/agui/."""
