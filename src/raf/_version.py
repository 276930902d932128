"""raf's version, in a module of its own so that any layer can read it without
importing the package face (`raf/__init__.py`), and the build reads it from here."""

__version__ = "0.2.0.dev0"
