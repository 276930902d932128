"""Agent documents: their models (the schema), the dialects they may be written in and
their normalisation to raf's own, and loading and checking them with located problems.
Nothing here builds an agent; `raf.decl.agent` links a loaded document to one."""
