"""raf context layer."""
