"""raf tools layer."""
