"""Super-brain: an agent's persistent memory across sessions, in plain Markdown files."""

from raf.context.memory.provider import SuperBrainContextProvider
from raf.context.memory.store import MemoryStore
from raf.context.memory.validate import validate_memory
from raf.context.memory.worker import ConsolidationJob, ConsolidationWorker

__all__ = [
    "ConsolidationJob",
    "ConsolidationWorker",
    "MemoryStore",
    "SuperBrainContextProvider",
    "validate_memory",
]
