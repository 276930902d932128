"""What `build()` would refuse, found while validating: every model block is planned the
way the builder plans it (without making a client), so `raf validate` and build agree."""

from __future__ import annotations

from typing import Any

from raf.core.errors import Problem
from raf.decl.context_decls import CompressionContextDecl, CompressionDecl, MemoryContextDecl
from raf.decl.model_client import check_model, speaks_responses
from raf.decl.source import Document, KeyPath


def model_problems(decl: Any, doc: Document) -> list[Problem]:
    """Problems of the document's model blocks; warnings go to `doc.warnings`."""
    places: list[tuple[KeyPath, Any]] = [(("model",), decl.model)]
    if decl.compression is not None:
        places += _compression_models(("compression",), decl.compression)
    for index, context in enumerate(decl.contexts or []):
        path: KeyPath = ("contexts", index, "config")
        if isinstance(context, CompressionContextDecl):
            places += _compression_models(path, context.config)
        elif isinstance(context, MemoryContextDecl) and context.config.enabled:
            places.append(((*path, "memoryModel"), context.config.memory_model))
    problems: list[Problem] = []
    hosted = [i for i, tool in enumerate(decl.tools) if getattr(tool, "kind", None) == "hosted"]
    if hosted and speaks_responses(decl.model) is False:
        for index in hosted:
            problems.append(
                doc.problem(
                    ("tools", index, "kind"),
                    f"the hosted tool {decl.tools[index].type!r} runs only on OpenAI's "
                    "Responses API: give the model apiType: Responses (or provider "
                    "openai-responses), or remove the tool",
                )
            )
    for path, model in places:
        errors, warnings = check_model(model, doc.base_dir)
        problems += [doc.problem(path, message) for message in errors]
        doc.warnings += [doc.problem(path, message) for message in warnings]
    return problems


def _compression_models(path: KeyPath, decl: CompressionDecl) -> list[tuple[KeyPath, Any]]:
    out: list[tuple[KeyPath, Any]] = [((*path, "model"), decl.model)] if decl.model else []
    for index, step in enumerate(decl.strategies):
        out += _compression_models((*path, "strategies", index), step)
    return out
