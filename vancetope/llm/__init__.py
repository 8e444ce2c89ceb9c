"""LLM providers: one interface, a scripted offline provider, OpenAI-compatible and Anthropic."""
