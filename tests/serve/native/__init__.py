"""Tests of serve/native/."""
