"""ACP: one agent for an editor over the Agent Client Protocol on stdio (`agent`), and
the prompt blocks and tool-call views it reads and shows (`parts`)."""
