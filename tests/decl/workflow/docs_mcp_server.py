"""A stand-in for the Microsoft Learn docs MCP server (one tool, `microsoft_docs_search`),
run over stdio by the MAF sample tests."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("docs-test-server")


@server.tool()
def microsoft_docs_search(query: str) -> str:
    """Search the documentation."""
    return f'[{{"title": "About {query}", "content": "{query} is documented here."}}]'


@server.tool(name="docs___microsoft_docs_search")
def toolbox_docs_search(query: str) -> str:
    """The same search, as a toolbox serves it under its label."""
    return microsoft_docs_search(query)


if __name__ == "__main__":
    server.run("stdio")
