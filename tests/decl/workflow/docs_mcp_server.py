"""A stand-in for the Microsoft Learn docs MCP server (one tool, `microsoft_docs_search`),
run by the MAF sample tests over stdio, or with `http PORT` over streamable HTTP on
127.0.0.1."""

from __future__ import annotations

import sys

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
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
