"""What `build()` would refuse, found while validating: every model block is planned the
way the builder plans it (without making a client), so `raf validate` and build agree."""

from __future__ import annotations

from typing import Any

from raf.core.errors import Problem
from raf.decl.documents.context_decls import (
    CompressionContextDecl,
    CompressionDecl,
    MemoryContextDecl,
)
from raf.decl.documents.extras import MODEL_EXTRAS, missing_extra
from raf.decl.documents.loaded import LoadedAgent
from raf.decl.documents.model_plan import check_model, model_spec_of, speaks_responses
from raf.decl.documents.source import Document, KeyPath


def _model_places(decl: Any) -> list[tuple[KeyPath, Any]]:
    """Every model block of a document, with where it is."""
    places: list[tuple[KeyPath, Any]] = [(("model",), decl.model)]
    if decl.compression is not None:
        places += _compression_models(("compression",), decl.compression)
    for index, context in enumerate(decl.contexts or []):
        path: KeyPath = ("contexts", index, "config")
        if isinstance(context, CompressionContextDecl):
            places += _compression_models(path, context.config)
        elif isinstance(context, MemoryContextDecl) and context.config.enabled:
            places.append(((*path, "memoryModel"), context.config.memory_model))
    return places


def model_extra_problems(loaded: LoadedAgent) -> list[Problem]:
    """A model whose client's extra is not installed, in the document or its sub-agents.

    Checked by `raf validate`, not when a document is loaded to run: a run may replace
    the document's model (`--model`, `RAF_MODEL`, a client given in code), and then the
    document's own model needs nothing."""
    problems: list[Problem] = []
    for path, model in _model_places(loaded.decl):
        spec = model_spec_of(model, loaded.doc.base_dir)
        if spec is None or spec.provider not in MODEL_EXTRAS:
            continue
        missing = missing_extra(f"the model {str(spec)!r}", MODEL_EXTRAS[spec.provider])
        if missing is not None:
            problems.append(loaded.doc.problem(path, str(missing)))
    for sub in loaded.sub_agents:
        problems += model_extra_problems(sub)
    return problems


def model_problems(decl: Any, doc: Document) -> list[Problem]:
    """Problems of the document's model blocks; warnings go to `doc.warnings`."""
    places = _model_places(decl)
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
