"""Context providers from context declarations; each integration is imported only here,
when declared, so a missing extra fails with an error naming it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from raf.core.chat_client import ChatClient
from raf.core.context import BaseContextProvider, ContextProvider, ContextResult
from raf.core.errors import RafError
from raf.core.messages import ChatMessage
from raf.core.options import AgentRunOptions
from raf.core.sessions import AgentSession
from raf.core.tools import Tool
from raf.decl.agent.model_client import Connection, client_for
from raf.decl.documents.extras import require
from raf.decl.documents.schema import (
    CompressionDecl,
    KnowledgeContextDecl,
    McpContextDecl,
    MemoryContextDecl,
    SkillsContextDecl,
    WikiContextDecl,
    WorkspaceContextDecl,
)

ClientSource = Callable[[], ChatClient]


def workspace_provider(decl: WorkspaceContextDecl, base_dir: Path) -> Any:
    """A `WorkspaceContextProvider` for the declared root and policy (unknown policies
    fail closed to DENY_OUTSIDE inside `ScopePolicy.parse`)."""
    from raf.context.workspace import WorkspaceContextProvider
    from raf.tools.workspace import WorkspaceScope

    rules = [r.model_dump(exclude_none=True) for r in decl.config.rules]
    scope = WorkspaceScope(base_dir / decl.config.root, decl.name, decl.config.policy, rules)
    return WorkspaceContextProvider(scope, name=decl.name)


def skills_provider(decl: SkillsContextDecl, base_dir: Path) -> ContextProvider:
    from raf.context.skills import AgentSkillsProvider

    directories = [base_dir / d for d in decl.config.all_directories]
    provider: ContextProvider = AgentSkillsProvider(directories, name=decl.name)
    return provider


def memory_provider(
    decl: MemoryContextDecl, base_dir: Path, connections: Mapping[str, Connection]
) -> ContextProvider:
    """Super-brain memory; without `memoryModel` the curator uses the agent's own model."""
    from raf.context.memory import SuperBrainContextProvider

    model = decl.config.memory_model
    memory_client = client_for(model, connections, base_dir) if model is not None else None
    provider: ContextProvider = SuperBrainContextProvider(
        base_dir / decl.config.directory,
        consolidation_interval=decl.config.consolidation_interval,
        memory_client=memory_client,
        name=decl.name,
        access=decl.config.access,
    )
    return provider


def knowledge_provider(decl: KnowledgeContextDecl, base_dir: Path) -> ContextProvider:
    try:
        from raf.context.knowledge import KnowledgeProvider
    except ImportError as exc:
        raise require("a 'knowledge' context", "rag", exc) from exc
    options: dict[str, Any] = {"name": decl.name}
    config = decl.config
    for key in ("top_k", "mode", "max_chars", "overlap", "min_score"):
        value = getattr(config, key)
        if value is not None:
            options[key] = value
    if config.index_path:
        options["index_path"] = str(base_dir / config.index_path)
    if config.embedder is not None:
        options["embedder"] = None if config.embedder == "none" else config.embedder
    sources = [s if "://" in s else str(base_dir / s) for s in config.sources]
    provider: ContextProvider = KnowledgeProvider(sources, **options)
    return provider


def wiki_provider(decl: WikiContextDecl, base_dir: Path) -> ContextProvider:
    try:
        from raf.context.wiki import WikiProvider
    except ImportError as exc:
        raise require("a 'wiki' context", "wiki", exc) from exc
    provider: ContextProvider = WikiProvider(base_dir / decl.config.directory, name=decl.name)
    return provider


def mcp_provider(decl: McpContextDecl, base_dir: Path) -> ContextProvider:
    try:
        from raf.context.mcp import McpContextProvider
        from raf.tools.mcp import McpServerConfig
    except ImportError as exc:
        raise require("an 'mcp' context", "mcp", exc) from exc
    config = McpServerConfig(**_with_cwd(decl.config.to_config(decl.name), base_dir))
    provider: ContextProvider = McpContextProvider(config, name=decl.name)
    return provider


def _with_cwd(config: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    if config.get("command") and config.get("cwd"):
        config["cwd"] = str(base_dir / config["cwd"])
    oauth = config.get("oauth")
    if isinstance(oauth, dict) and oauth.get("token_file"):  # beside the document
        oauth["token_file"] = str(base_dir / Path(oauth["token_file"]).expanduser())
    return config


def compression_strategy(
    decl: CompressionDecl, connections: Mapping[str, Connection], main_client: ClientSource
) -> Any:
    from raf.context.compression import (
        CompressionPipeline,
        ObservationMaskingStrategy,
        SlidingWindowStrategy,
        SummarizationStrategy,
        TokenBudgetStrategy,
    )

    keep: dict[str, Any] = {"keep_last": decl.keep_last} if decl.keep_last is not None else {}
    if decl.kind == "sliding_window":
        return SlidingWindowStrategy(**keep)
    if decl.kind == "observation_masking":
        return ObservationMaskingStrategy(**keep)
    if decl.kind == "token_budget":
        return TokenBudgetStrategy()
    if decl.kind == "summarization":
        client = client_for(decl.model, connections) if decl.model else main_client()
        options: dict[str, Any] = {}
        if decl.keep_last is not None:
            options["keep_recent"] = decl.keep_last
        if decl.threshold is not None:
            options["threshold"] = decl.threshold
        return SummarizationStrategy(client, **options)
    return CompressionPipeline(
        [compression_strategy(s, connections, main_client) for s in decl.strategies]
    )


def compression_provider(
    decl: CompressionDecl, name: str, connections: Mapping[str, Connection], main: ClientSource
) -> ContextProvider:
    from raf.context.compression import CompressionProvider
    from raf.core.tokens import EstimatingCounter, default_counter

    strategy = compression_strategy(decl, connections, main)
    counter: Any = None
    if decl.token_counter == "estimate":
        counter = EstimatingCounter()
    elif decl.token_counter == "tiktoken":  # exact when its tables are cached (no download)
        counter = default_counter()
    compact = decl.compact_tool
    if compact is None:
        try:
            compact = not is_embedded(main())
        except (RafError, ImportError):  # the model's own problem is reported on its own
            compact = True
    provider: ContextProvider = CompressionProvider(
        strategy,
        decl.budget,
        name=name,
        compact_tool=compact,
        counter=counter,
        pinned=decl.pinned,
    )
    return provider


def is_embedded(client: ChatClient) -> bool:
    """True for the embedded local model (a small model that does best with few tools)."""
    from raf.clients.local.client import LocalChatClient

    return isinstance(client, LocalChatClient)


class ToolsetProvider(BaseContextProvider):
    """Offers tools that need async discovery (MCP servers, OpenAPI documents): they are
    loaded at the first run, once, and injected into every run after it."""

    kind = "toolset"

    def __init__(
        self,
        name: str,
        load: Callable[[], Awaitable[Sequence[Tool]]],
        close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.name = name
        self._load = load
        self._close = close
        self._tools: list[Tool] | None = None

    async def aclose(self) -> None:
        """Close the connection behind the tools (an MCP server), if any."""
        if self._close is not None:
            await self._close()

    async def on_invoking(
        self,
        agent: Any,
        session: AgentSession,
        messages: Sequence[ChatMessage],
        options: AgentRunOptions,
    ) -> ContextResult:
        if self._tools is None:
            self._tools = list(await self._load())
        return ContextResult(tools=list(self._tools))

    def __repr__(self) -> str:
        return f"ToolsetProvider({self.name!r})"
