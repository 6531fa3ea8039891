"""A real llama.cpp engine on a tiny GGUF model the project writes itself (no model download, no Django)."""
