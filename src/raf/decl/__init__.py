"""raf decl layer."""
