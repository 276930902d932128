"""The Berkeley Function Calling Leaderboard's single-turn categories, scored as BFCL scores
them, on any chat client (`raf eval --bfcl simple_python,multiple,irrelevance`)."""

from __future__ import annotations

from raf.evals.bfcl.checker import Verdict, check
from raf.evals.bfcl.data import CATEGORIES, BfclItem, DeclaredTool, evenly_spaced, load
from raf.evals.bfcl.run import BfclReport, BfclResult, run_bfcl

__all__ = [
    "CATEGORIES",
    "BfclItem",
    "BfclReport",
    "BfclResult",
    "DeclaredTool",
    "Verdict",
    "check",
    "evenly_spaced",
    "load",
    "run_bfcl",
]
