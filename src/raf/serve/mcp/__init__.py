"""The MCP server: an agent as MCP tools (`server`), what a run reports to the client
(`report`), and the guard of its HTTP transport (`guard`)."""
