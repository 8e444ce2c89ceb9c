"""The memory kernel: items at tenant, group, project and session scope, documents, and hybrid
search over both (ARCHITECTURE §8, PROTOCOL's memory item and search result)."""
