"""Chat clients and their decorators (the tool loop that wraps them is `raf.agent.run`)."""
