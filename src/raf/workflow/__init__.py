"""raf workflow layer."""
