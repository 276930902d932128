"""Tests of serve/a2a/."""
