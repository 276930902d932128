"""A dataset: cases and the evaluators every case gets; read from and written to YAML or
JSON, checked against a published JSON Schema, and evaluated against a target."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from raf.core.contents import TextContent
from raf.core.errors import ConfigurationError, MissingExtraError, Problem, ValidationProblems
from raf.core.messages import ChatMessage
from raf.core.private_files import atomic_write_text
from raf.evals.case import Case, Evaluator, ExpectedCall
from raf.evals.evaluator import EvaluatorFunction, as_evaluator
from raf.evals.report import EvalReport
from raf.evals.run import ProgressCallback, evaluate_cases
from raf.evals.specs import BARE, BUILDERS, SpecError, evaluator_from_spec
from raf.evals.targets import TargetLike

SCHEMA_ID = "https://raf.dev/schemas/eval-dataset.json"
SCHEMA_FILE = Path(__file__).with_name("dataset.schema.json")
"""The schema as shipped in the package (kept equal to `dataset_schema()` by a test)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MessageFile(_Strict):
    """A message of a conversation input."""

    role: str = Field(pattern="^(system|user|assistant)$")
    content: str


class ExpectedCallFile(_Strict):
    """A tool call the case expects; arguments are matchers (see `ExpectedCall`)."""

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class CaseFile(_Strict):
    """One case as a dataset file writes it."""

    name: str = Field(min_length=1)
    input: Any = Field(
        description="a prompt, a list of {role, content} messages, or any JSON value"
    )
    expected_output: Any = None
    expected_tool_calls: list[ExpectedCallFile] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    evaluators: list[Any] = Field(default_factory=list)


class DatasetFile(_Strict):
    """A dataset file."""

    schema_ref: str | None = Field(default=None, alias="$schema")
    name: str = ""
    description: str = ""
    evaluators: list[Any] = Field(default_factory=list)
    cases: list[CaseFile] = Field(min_length=1)


def dataset_schema() -> dict[str, Any]:
    """The JSON Schema of dataset files (published as `raf eval --schema`)."""
    schema = DatasetFile.model_json_schema(by_alias=True)
    evaluator: dict[str, Any] = {
        "description": "an evaluator: a bare name, or a mapping of one evaluator name to "
        "its settings",
        "oneOf": [
            {"type": "string", "enum": list(BARE)},
            {
                "type": "object",
                "minProperties": 1,
                "maxProperties": 1,
                "propertyNames": {"enum": list(BUILDERS)},
            },
        ],
    }
    schema.setdefault("$defs", {})["Evaluator"] = evaluator
    schema["properties"]["evaluators"]["items"] = {"$ref": "#/$defs/Evaluator"}
    schema["$defs"]["CaseFile"]["properties"]["evaluators"]["items"] = {"$ref": "#/$defs/Evaluator"}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def _is_messages(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, dict) and set(m) == {"role", "content"} for m in value)
    )


@dataclass(kw_only=True, slots=True)
class Dataset:
    """Cases and the evaluators each of them gets."""

    cases: list[Case]
    evaluators: list[Evaluator] = field(default_factory=list)
    name: str = "dataset"
    description: str = ""

    def __post_init__(self) -> None:
        self.evaluators = [as_evaluator(e) for e in self.evaluators]
        for case in self.cases:
            case.evaluators = [as_evaluator(e) for e in case.evaluators]
        names = [c.name for c in self.cases]
        if len(set(names)) < len(names):
            repeated = sorted({n for n in names if names.count(n) > 1})
            raise ConfigurationError(f"case names must be unique; repeated: {', '.join(repeated)}")

    def add_evaluator(self, evaluator: Evaluator | EvaluatorFunction) -> Dataset:
        self.evaluators.append(as_evaluator(evaluator))
        return self

    def select(self, *, tags: Sequence[str] = (), names: Sequence[str] = ()) -> Dataset:
        """A dataset of the cases with any of `tags` and/or one of `names`."""
        cases = [
            c
            for c in self.cases
            if (not tags or set(tags) & set(c.tags)) and (not names or c.name in names)
        ]
        return Dataset(
            cases=cases, evaluators=self.evaluators, name=self.name, description=self.description
        )

    async def evaluate(
        self,
        target: TargetLike,
        *,
        concurrency: int = 4,
        repeat: int = 1,
        progress: ProgressCallback | bool | None = None,
        name: str = "",
        tracer_provider: Any = None,
    ) -> EvalReport:
        """Run every case on `target` (an agent, a workflow, an OpenAI-compatible URL, a
        chat client or a function), `concurrency` at once, each `repeat` times."""
        return await evaluate_cases(
            self.cases,
            target,
            self.evaluators,
            dataset=self.name,
            concurrency=concurrency,
            repeat=repeat,
            progress=progress,
            name=name,
            tracer_provider=tracer_provider,
        )

    def evaluate_sync(self, target: TargetLike, **kwargs: Any) -> EvalReport:
        """`evaluate` from code that is not async."""
        return asyncio.run(self.evaluate(target, **kwargs))

    # -- files ------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.description:
            out["description"] = self.description
        if self.evaluators:
            out["evaluators"] = [e.to_spec() for e in self.evaluators]
        out["cases"] = [case_to_dict(c) for c in self.cases]
        return out

    def save(self, path: str | Path) -> Path:
        """Write the dataset as YAML (`.yaml`/`.yml`) or JSON (anything else)."""
        target = Path(path)
        data = self.to_dict()
        if target.suffix.lower() in (".yaml", ".yml"):
            try:
                import yaml
            except ImportError as exc:  # pragma: no cover - yaml is in the evals extra
                raise MissingExtraError("YAML datasets", "evals", "pyyaml") from exc
            text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
        else:
            text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        atomic_write_text(target, text, keep_mode=True)  # a new file is private (0600)
        return target

    @classmethod
    def from_file(cls, path: str | Path) -> Dataset:
        """Read a YAML or JSON dataset; every problem is reported with file, line and key."""
        from raf.decl.documents.document_file import read_document

        text, fmt = read_document(path)
        if fmt == "toml":
            fmt = "yaml"
        return cls.from_text(text, fmt=fmt, file=str(path))

    @classmethod
    def from_text(cls, text: str, *, fmt: str = "yaml", file: str | None = None) -> Dataset:
        from raf.decl.documents.source import Document, load_text

        doc: Document = load_text(text, fmt=fmt, file=file)
        if doc.problems:
            raise ValidationProblems([_as_dataset_problem(p) for p in doc.problems])
        try:
            parsed = DatasetFile.model_validate(doc.data)
        except ValidationError as exc:
            found: list[Problem] = []
            for error in exc.errors():
                loc = tuple(p for p in error["loc"] if not isinstance(p, str) or p != "$schema")
                key = error["type"] == "extra_forbidden"
                message = error["msg"]
                if key:
                    message = f"unknown key {loc[-1]!r}" if loc else message
                elif error["type"] == "missing":
                    message = f"{loc[-1]!r} is required" if loc else message
                found.append(doc.problem(loc, message, key=key))
            raise ValidationProblems(found) from None
        problems: list[Problem] = []

        def evaluators(specs: list[Any], where: tuple[str | int, ...]) -> list[Evaluator]:
            built: list[Evaluator] = []
            for index, spec in enumerate(specs):
                try:
                    built.append(evaluator_from_spec(spec))
                except SpecError as exc:
                    path = (*where, index, *exc.key)
                    problems.append(doc.problem(path, str(exc), key=len(exc.key) == 1))
            return built

        defaults = evaluators(parsed.evaluators, ("evaluators",))
        cases: list[Case] = []
        seen: dict[str, int] = {}
        for index, item in enumerate(parsed.cases):
            if item.name in seen:
                problems.append(
                    doc.problem(
                        ("cases", index, "name"),
                        f"case name {item.name!r} is already used by case {seen[item.name]}",
                    )
                )
            seen.setdefault(item.name, index)
            value = item.input
            if _is_messages(value):
                try:
                    value = [
                        ChatMessage(role=m["role"], contents=[TextContent(text=str(m["content"]))])
                        for m in value
                    ]
                except ValueError as exc:
                    problems.append(doc.problem(("cases", index, "input"), str(exc)))
            cases.append(
                Case(
                    name=item.name,
                    input=value,
                    expected_output=item.expected_output,
                    expected_tool_calls=[
                        ExpectedCall(name=c.name, arguments=c.arguments)
                        for c in item.expected_tool_calls
                    ],
                    metadata=item.metadata,
                    tags=item.tags,
                    evaluators=evaluators(item.evaluators, ("cases", index, "evaluators")),
                )
            )
        if problems:
            raise ValidationProblems(problems)
        name = parsed.name or (Path(file).stem if file else "dataset")
        return cls(cases=cases, evaluators=defaults, name=name, description=parsed.description)


def _as_dataset_problem(problem: Problem) -> Problem:
    if problem.message.startswith("an agent document must be a mapping"):
        return Problem(
            message=problem.message.replace("an agent document", "a dataset"),
            file=problem.file,
            line=problem.line,
            column=problem.column,
        )
    return problem


def case_to_dict(case: Case) -> dict[str, Any]:
    """A case as a dataset file writes it."""
    out: dict[str, Any] = {"name": case.name}
    value = case.input
    if isinstance(value, list) and value and all(isinstance(m, ChatMessage) for m in value):
        out["input"] = [{"role": m.role.value, "content": m.text} for m in value]
    else:
        out["input"] = value
    if case.expected_output is not None:
        out["expected_output"] = case.expected_output
    if case.expected_tool_calls:
        out["expected_tool_calls"] = [c.to_dict() for c in case.expected_tool_calls]
    if case.metadata:
        out["metadata"] = case.metadata
    if case.tags:
        out["tags"] = case.tags
    if case.evaluators:
        out["evaluators"] = [e.to_spec() for e in case.evaluators]
    return out
