"""Writes an agent document in another dialect: raf's own, Microsoft Agent Framework's
(MAF), or the original framework's. Environment references stay references; nothing
secret is resolved on the way."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from raf.core.errors import Problem, ValidationProblems
from raf.decl.documents.dialects import normalize
from raf.decl.documents.document_kind import is_workflow_data
from raf.decl.documents.loader import read_document
from raf.decl.documents.orchestration import in_original_spelling, in_raf_spelling
from raf.decl.documents.problems import problems_from_validation
from raf.decl.documents.schema import AgentDecl
from raf.decl.documents.source import Document, env_reference, load_text, substitute_env

TARGETS = ("raf", "maf", "original")
"""The dialects `convert` writes."""

_OPTIONS_TO_MAF = {
    "maxTokens": "maxOutputTokens",
    "stop": "stopSequences",
    "toolChoice": "chatToolMode",
    "additional": "additionalProperties",
}


def read_as_raf(path: str | Path) -> tuple[dict[str, Any], list[Problem]]:
    """The document at `path` in raf's spelling (references unresolved), with warnings.
    A document that does not validate is refused with its problems (an unset
    environment variable is only a warning here: references stay references)."""
    text, fmt = read_document(path)
    doc = load_text(text, fmt=fmt, file=str(path), base_dir=Path(path).parent)
    if doc.problems:
        raise ValidationProblems(doc.problems)
    if is_workflow_data(doc.data):
        return _workflow(doc)
    _refuse_invalid(text, fmt, path)
    normalize(doc)
    in_raf_spelling(doc)
    return _as_dict(doc), list(doc.warnings)


def _workflow(doc: Document) -> tuple[dict[str, Any], list[Problem]]:
    """A workflow document as read, once it validates: raf reads each dialect's workflow
    documents as they are written, so every target writes the same document, with each
    formula that MAF writes unquoted (`value: =[{id: 3}]`) quoted as YAML needs. As for
    an agent document, its agents' environment variables need not be set (a warning)."""
    from raf.decl.workflow.loader import check_workflow

    data = copy.deepcopy(_as_dict(doc))
    loaded = check_workflow(doc, unset_env_is_warning=True)
    return data, list(loaded.warnings)


def _refuse_invalid(text: str, fmt: str, path: str | Path) -> None:
    """Raise the document's schema problems, located (files it names need not exist on
    this machine, nor its environment variables be set, for it to be converted)."""
    doc = load_text(text, fmt=fmt, file=str(path), base_dir=Path(path).parent)
    if doc.problems:
        raise ValidationProblems(doc.problems)
    substitute_env(doc, unset_is_warning=True)
    normalize(doc)
    try:
        AgentDecl.model_validate(doc.data)
    except ValidationError as exc:
        raise ValidationProblems(problems_from_validation(exc, doc)) from None


def _as_dict(doc: Document) -> dict[str, Any]:
    data = doc.data
    assert isinstance(data, dict)  # load_text reports anything else as a problem
    return data


def convert(data: dict[str, Any], to: str, *, base_dir: Path | None = None) -> dict[str, Any]:
    """`data` (raf's spelling) in dialect `to`; a workflow document is the same in each.
    `base_dir` is the folder of the document, where its sub-agents' files are."""
    if to not in TARGETS:
        raise ValueError(f"unknown dialect {to!r}; use one of: {', '.join(TARGETS)}")
    if to == "raf" or is_workflow_data(data):
        return copy.deepcopy(data)
    if to == "original":
        return to_original(data, base_dir=base_dir)
    return to_maf(data)


def to_original(data: dict[str, Any], *, base_dir: Path | None = None) -> dict[str, Any]:
    """A raf document as the original framework writes it: raf's camelCase is its own, so
    only what it spells differently changes (its orchestration keys, in the document and
    in inline sub-agents; options that name sub-agents by name are written by place)."""
    out = copy.deepcopy(data)
    metadata = out.get("metadata")
    if isinstance(metadata, dict) and "orchestration" in metadata:
        members = _sub_agent_names(out, base_dir)
        own_agent = any(out.get(key) for key in ("instructions", "tools", "contexts"))
        metadata["orchestration"] = in_original_spelling(
            metadata["orchestration"], members, own_agent=own_agent
        )
    for sub in out.get("subAgents") or []:
        if isinstance(sub, dict) and "file" not in sub:
            sub.update(to_original(sub, base_dir=base_dir))
    return out


def _sub_agent_names(data: dict[str, Any], base_dir: Path | None) -> list[str] | None:
    """The sub-agents' names in their order (a reference's `name`, else its file's), or
    None when one cannot be told."""
    names: list[str] = []
    for sub in data.get("subAgents") or []:
        name = sub.get("name") if isinstance(sub, dict) else None
        if name is None and isinstance(sub, dict) and isinstance(sub.get("file"), str):
            name = _file_name(sub["file"], base_dir)
        if not isinstance(name, str):
            return None
        names.append(name)
    return names


def _file_name(file: str, base_dir: Path | None) -> str | None:
    """The `name` of the agent document a sub-agent reference points to, if it reads."""
    if base_dir is None:
        return None
    path = base_dir / file
    try:
        text, fmt = read_document(path)
    except ValidationProblems:  # read_as_raf reported it; a name is all that is asked here
        return None
    doc = load_text(text, fmt=fmt, file=str(path), base_dir=path.parent)
    name = doc.data.get("name") if isinstance(doc.data, dict) else None
    return name if isinstance(name, str) else None


def to_maf(data: dict[str, Any], *, top: bool = True) -> dict[str, Any]:
    """A raf document in Microsoft Agent Framework's spelling (keys MAF has no word for,
    such as `contexts`, stay as raf writes them)."""
    out: dict[str, Any] = _env_refs(copy.deepcopy(data))
    if top or "kind" in out:
        out["kind"] = "Agent" if out.get("kind") == "agent" else "Prompt"
    model = out.get("model")
    if isinstance(model, dict):
        _model_to_maf(model)
    for key in ("inputSchema", "outputSchema"):
        schema = out.get(key)
        if isinstance(schema, dict):
            out[key] = _properties_to_mapping(schema)
    for tool in out.get("tools") or []:
        if isinstance(tool, dict):
            _tool_to_maf(tool)
    for sub in out.get("subAgents") or []:
        if isinstance(sub, dict) and "file" not in sub:
            sub.update(to_maf(sub, top=False))
    return out


def _model_to_maf(model: dict[str, Any]) -> None:
    if model.get("apiType") == "responses":
        model["apiType"] = "Responses"
    connection = model.get("connection")
    if isinstance(connection, dict):
        if "apiKey" in connection:
            connection["key"] = connection.pop("apiKey")
        connection.setdefault("kind", "key")
    options = model.get("options")
    if isinstance(options, dict):
        for raf_key, maf_key in _OPTIONS_TO_MAF.items():
            if raf_key in options:
                options[maf_key] = options.pop(raf_key)


_HOSTED_TO_MAF = {
    "vector_store_ids": "vectorStoreIds",
    "max_num_results": "maximumResultCount",
    "search_context_size": "searchContextSize",
    "user_location": "userLocation",
}
"""Keys of a hosted tool's API object that MAF writes at the tool's top level."""


def _hosted_to_maf(tool: dict[str, Any]) -> None:
    """`kind: hosted` of a type MAF has a kind for, in MAF's spelling, when each of its
    keys has a MAF word (a new code container may name files); else as raf writes it."""
    kind, config = tool.get("type"), dict(tool.get("config") or {})
    if kind not in ("web_search", "file_search", "code_interpreter"):
        return
    container = config.pop("container", None) if kind == "code_interpreter" else None
    if container is not None and (
        not isinstance(container, dict) or set(container) - {"type", "file_ids"}
    ):
        return
    if any(key not in _HOSTED_TO_MAF for key in config):
        return
    tool.pop("config", None)
    tool["kind"] = tool.pop("type")
    for key, value in config.items():
        tool[_HOSTED_TO_MAF[key]] = value
    if container and container.get("file_ids"):
        tool["fileIds"] = container["file_ids"]


def _tool_to_maf(tool: dict[str, Any]) -> None:
    if tool.get("kind") == "hosted":
        _hosted_to_maf(tool)
        return
    if isinstance(tool.get("parameters"), dict):
        tool["parameters"] = _properties_to_mapping(tool["parameters"])
    if tool.get("approvalRequired") is not None and tool.get("kind") == "function":
        tool["requireApproval"] = tool.pop("approvalRequired")
    config = tool.get("config")
    if tool.get("kind") != "mcp" or not isinstance(config, dict) or "url" not in config:
        return
    tool["url"] = config.pop("url")
    if "tools" in config:
        tool["allowedTools"] = config.pop("tools")
    if "approvalMode" in config:
        tool["requireApproval"] = _approval_to_maf(config.pop("approvalMode"))
    if not config:
        del tool["config"]


def _approval_to_maf(mode: Any) -> Any:
    """raf's approval mode as MAF's; per-tool modes are MAF's `requireSpecific` (where a
    tool listed in neither list needs approval)."""
    if isinstance(mode, dict):
        named = {k: v for k, v in mode.items() if k != "*"}
        return {
            "kind": "requireSpecific",
            "alwaysRequireApprovalTools": [k for k, v in named.items() if v == "always"],
            "neverRequireApprovalTools": [k for k, v in named.items() if v == "never"],
        }
    return {"kind": mode}


def _properties_to_mapping(schema: dict[str, Any]) -> dict[str, Any]:
    """A `properties` list of `{name, …}` as MAF's mapping of name to `{…}`."""
    properties = schema.get("properties")
    if not isinstance(properties, list):
        return schema
    mapping: dict[str, Any] = {}
    for item in properties:
        if isinstance(item, dict) and "name" in item:
            entry = {k: v for k, v in item.items() if k != "name"}
            if isinstance(entry.get("properties"), list):
                entry = _properties_to_mapping(entry)
            mapping[str(item["name"])] = entry
    return {**schema, "properties": mapping}


def _env_refs(value: Any) -> Any:
    """`$VAR` and `${VAR}` written as MAF's `=Env.VAR`."""
    if isinstance(value, dict):
        return {k: _env_refs(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_env_refs(v) for v in value]
    if isinstance(value, str):
        name = env_reference(value)
        if name is not None:
            return f"=Env.{name}"
    return value


def dump(data: dict[str, Any], fmt: str) -> str:
    """`data` as YAML or JSON text, the same value, but with every character a terminal
    acts on or that hides text (controls, bidirectional overrides, zero-width characters)
    written as a `\\u` escape inside a quoted string, so the document can be printed and
    reviewed as it reads."""
    from raf.core.safe_text import escape_hidden_characters, has_hidden_characters

    if fmt == "json":
        import json

        return escape_hidden_characters(json.dumps(data, indent=2, ensure_ascii=False)) + "\n"
    from raf.decl.documents.source import _yaml

    yaml = _yaml()

    class _Dumper(yaml.SafeDumper):  # type: ignore[misc,name-defined]
        """Multi-line text as a literal block, as people write instructions; text with a
        hidden character double-quoted, the one style in which YAML reads escapes."""

    def text(dumper: Any, value: str) -> Any:
        if has_hidden_characters(value):
            style: str | None = '"'
        else:
            style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _Dumper.add_representer(str, text)
    out: str = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    # they stand only in double-quoted scalars now, where YAML reads escapes
    return escape_hidden_characters(out, surrogate_pairs=False)
