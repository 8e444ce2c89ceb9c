"""The memory kernel: items at tenant, group, project and session scope, documents, and hybrid
search over both (docs/protocol.md: the memory item and the search result)."""
