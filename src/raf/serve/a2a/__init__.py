"""A2A: the JSON-RPC endpoint and agent card (`routes`), request shapes and versions
(`requests`), and tasks kept in the session store (`tasks`)."""
