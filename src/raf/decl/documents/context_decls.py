"""Context declarations (workspace, skills, memory, knowledge, wiki, MCP) and compression."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from raf.decl.documents.base import MAX_COUNT, MAX_SIZE, NAME_PATTERN, DeclModel
from raf.decl.documents.model_decls import ConnectionDecl, ModelDecl
from raf.decl.documents.tool_decls import McpServerDecl

DEFAULT_MEMORY_DIRECTORY = "logs/super-brain"
"""Where the super-brain keeps its files when a document does not say."""

DEFAULT_SKILLS_DIRECTORY = "skills"
"""Where skills are looked for when a document does not say."""

# -- compression ----------------------------------------------------------------------

MAX_FACTS = 1_000
"""The most pinned facts a document may declare."""
MAX_FACT = 100_000
"""The longest pinned fact, in characters."""


class CompressionDecl(DeclModel):
    """How history is compressed; the provider always runs last, so it compresses
    everything injected before it."""

    kind: Literal[
        "sliding_window", "token_budget", "observation_masking", "summarization", "pipeline"
    ]
    name: str = "compression"
    budget: int = Field(
        default=24_000, gt=0, le=MAX_SIZE, description="token budget of the history"
    )
    keep_last: int | None = Field(
        default=None, ge=0, le=MAX_SIZE, description="messages kept verbatim"
    )
    threshold: float | None = Field(
        default=None, gt=0, le=1, description="summarise above this fraction of the budget"
    )
    model: ModelDecl | None = Field(default=None, description="summariser model")
    token_counter: Literal["tiktoken", "estimate"] | None = Field(
        default=None, description="how tokens are counted (default: tiktoken when cached)"
    )
    compact_tool: bool | None = Field(
        default=None,
        description="offer the model a `compact` tool to compress on demand (default: yes, "
        "except to the embedded local model, which does better with fewer tools)",
    )
    strategies: list[CompressionDecl] = Field(default_factory=list)
    pinned: list[Annotated[str, Field(min_length=1, max_length=MAX_FACT)]] = Field(
        default_factory=list,
        max_length=MAX_FACTS,
        description="facts kept word for word in every compressed history, counted "
        "against the budget first",
    )

    @model_validator(mode="after")
    def _pipeline_has_steps(self) -> CompressionDecl:
        if self.kind == "pipeline" and not self.strategies:
            raise ValueError("a 'pipeline' needs at least one entry in 'strategies'")
        if self.kind != "pipeline" and self.strategies:
            raise ValueError("'strategies' is only for kind 'pipeline'")
        if any(step.pinned for step in self.strategies):
            raise ValueError(
                "'pinned' facts belong to the compression itself, not to a step of its pipeline"
            )
        if any(not fact.strip() for fact in self.pinned):
            raise ValueError("a 'pinned' fact must be text, not blank")
        return self


# -- contexts -------------------------------------------------------------------------


class MemoryModelDecl(DeclModel):
    id: str | None = None
    provider: str | None = None
    model_path: str | None = None
    connection: ConnectionDecl | None = None


class MemoryConfigDecl(DeclModel):
    directory: str = Field(default=DEFAULT_MEMORY_DIRECTORY, description="relative to the document")
    enabled: bool = Field(default=True, description="false turns the memory off")
    access: Literal["tools", "skill"] = Field(
        default="tools",
        description="read_memory/list_memory, or the skill super-brain through "
        "load_skill/read_skill_resource",
    )
    consolidation_interval: int = Field(default=3, ge=0, le=MAX_COUNT)
    memory_model: MemoryModelDecl | None = None


class MemoryContextDecl(DeclModel):
    kind: Literal["memory"]
    name: Literal["super-brain"] = "super-brain"
    config: MemoryConfigDecl = Field(default_factory=MemoryConfigDecl)


RuleActionDecl = Literal["allow", "approve", "deny"]
RuleAccessDecl = Literal["read", "write", "delete", "execute"]


class WorkspaceRuleDecl(DeclModel):
    """A per-path rule layered over the policy: `{path: "secrets/**", read: deny}` or
    `{path: "build/**", action: allow, access: [write, delete]}`."""

    path: str = Field(description="glob relative to the root (or absolute); ** crosses folders")
    action: RuleActionDecl | None = None
    access: list[RuleAccessDecl] | None = None
    read: RuleActionDecl | None = None
    write: RuleActionDecl | None = None
    delete: RuleActionDecl | None = None
    execute: RuleActionDecl | None = None

    @model_validator(mode="after")
    def _says_something(self) -> WorkspaceRuleDecl:
        if self.action is None and not any((self.read, self.write, self.delete, self.execute)):
            raise ValueError("a rule needs 'action' or one of read/write/delete/execute")
        return self


class WorkspaceConfigDecl(DeclModel):
    root: str = "."
    policy: str = Field(
        default="approve",
        description="read|allow|allow_all, approve|ask|approve_outside, deny|restrict|deny_outside",
    )
    rules: list[WorkspaceRuleDecl] = Field(default_factory=list)


class WorkspaceContextDecl(DeclModel):
    kind: Literal["workspace"]
    name: str = "workspace"
    config: WorkspaceConfigDecl = Field(default_factory=WorkspaceConfigDecl)


class SkillsConfigDecl(DeclModel):
    directory: str | None = Field(
        default=None, description=f"default {DEFAULT_SKILLS_DIRECTORY!r} when no directory is given"
    )
    directories: list[str] = Field(default_factory=list)

    @property
    def all_directories(self) -> list[str]:
        named = ([self.directory] if self.directory else []) + list(self.directories)
        return named or [DEFAULT_SKILLS_DIRECTORY]


class SkillsContextDecl(DeclModel):
    kind: Literal["skills"]
    name: str = "skills"
    config: SkillsConfigDecl = Field(default_factory=SkillsConfigDecl)


class KnowledgeConfigDecl(DeclModel):
    sources: list[str] = Field(
        min_length=1, description="files or folders (relative to this document) or http(s) URLs"
    )
    mode: Literal["instructions", "tool"] | None = Field(
        default=None, description="inject the best passages, or offer a search tool"
    )
    top_k: int | None = Field(default=None, gt=0, le=MAX_SIZE)
    max_chars: int | None = Field(
        default=None, gt=0, le=MAX_SIZE, description="chunk size in characters"
    )
    overlap: int | None = Field(default=None, ge=0, le=MAX_SIZE)
    index_path: str | None = None
    min_score: float | None = None
    embedder: Literal["auto", "local", "none"] | None = Field(
        default=None,
        description="unset or 'auto': hybrid (BM25 and meaning) search with raf's local "
        "embedder where the rag-embeddings extra is installed, else BM25 alone with a "
        "warning; 'local': the local embedder or an error; 'none': BM25 alone",
    )


class KnowledgeContextDecl(DeclModel):
    kind: Literal["knowledge"]
    name: str = "knowledge"
    config: KnowledgeConfigDecl


class WikiConfigDecl(DeclModel):
    directory: str


class WikiContextDecl(DeclModel):
    kind: Literal["wiki"]
    name: str = "wiki"
    config: WikiConfigDecl


class McpContextDecl(DeclModel):
    kind: Literal["mcp"]
    name: str = Field(pattern=NAME_PATTERN)
    config: McpServerDecl


class CompressionContextDecl(DeclModel):
    """`compression` may also be listed among contexts; it still runs last."""

    kind: Literal["compression"]
    name: str = "compression"
    config: CompressionDecl


ContextDecl = Annotated[
    MemoryContextDecl
    | WorkspaceContextDecl
    | SkillsContextDecl
    | KnowledgeContextDecl
    | WikiContextDecl
    | McpContextDecl
    | CompressionContextDecl,
    Field(discriminator="kind"),
]
CONTEXT_KINDS: tuple[str, ...] = (
    "memory",
    "workspace",
    "skills",
    "knowledge",
    "wiki",
    "mcp",
    "compression",
)

CompressionDecl.model_rebuild()
