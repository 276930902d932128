"""The embedded local model: a GGUF file run in this process on llama.cpp, the default
model's download, and what small models need (tool calls by grammar, the repetition stop)."""
