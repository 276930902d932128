"""The native HTTP API: agents, sessions, runs and their streams (`routes`)."""
