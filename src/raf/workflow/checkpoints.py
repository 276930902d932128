"""Checkpoint stores under the name they had before they moved to `raf.stores.checkpoints`
(their home, below the workflow layer)."""

from raf.stores.checkpoints import (
    CHECKPOINT_FORMAT,
    Checkpoint,
    CheckpointInfo,
    CheckpointStore,
    InMemoryCheckpointStore,
    JsonFileCheckpointStore,
    SqliteCheckpointStore,
    Status,
    answer_claimed,
)

__all__ = [
    "CHECKPOINT_FORMAT",
    "Checkpoint",
    "CheckpointInfo",
    "CheckpointStore",
    "InMemoryCheckpointStore",
    "JsonFileCheckpointStore",
    "SqliteCheckpointStore",
    "Status",
    "answer_claimed",
]
