"""raf's core: types and protocols only; depends on the standard library and pydantic.

Import names from the submodules (or from `raf`); this package imports nothing itself so
that loading one core type does not load them all.
"""
