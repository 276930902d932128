"""AG-UI: one endpoint that runs an agent and streams AG-UI events (`routes`)."""
