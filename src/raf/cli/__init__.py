"""raf cli layer."""
