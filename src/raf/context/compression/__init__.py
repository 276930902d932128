"""Compression: keep a conversation of any length inside its model's context window."""

from raf.context.compression.budget import DEFAULT_BUDGET, CompressionSettingError, input_budget
from raf.context.compression.provider import CompressionProvider
from raf.context.compression.strategies import (
    AnyCompressionStrategy,
    CompressionPipeline,
    CompressionStrategy,
    ObservationMaskingStrategy,
    SlidingWindowStrategy,
    SyncCompressionStrategy,
    TokenBudgetStrategy,
    apply_strategy,
    apply_strategy_sync,
)
from raf.context.compression.summarize import CircuitBreaker, SummarizationStrategy
from raf.context.compression.units import dangling, split_units

__all__ = [
    "DEFAULT_BUDGET",
    "AnyCompressionStrategy",
    "CircuitBreaker",
    "CompressionPipeline",
    "CompressionProvider",
    "CompressionSettingError",
    "CompressionStrategy",
    "ObservationMaskingStrategy",
    "SlidingWindowStrategy",
    "SummarizationStrategy",
    "SyncCompressionStrategy",
    "TokenBudgetStrategy",
    "apply_strategy",
    "apply_strategy_sync",
    "dangling",
    "input_budget",
    "split_units",
]
