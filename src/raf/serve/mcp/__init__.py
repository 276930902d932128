"""The MCP server: an agent as MCP tools (`server`), what a run reports to the client
(`report`), and the MCP names of `raf serve`'s guard on its HTTP transport (`guard`)."""
