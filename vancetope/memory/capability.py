"""`ctx.memory` of a process (engines/capabilities.py `Memory`) and of the memory tools: reads
cascade from the process's session up to its tenant; writes go to its session or project (or,
for a process of a tenant admin, the group or tenant) with the process as their source. The
knowledge graph is read with the same reach: a node's neighbours and the edges of a type, never
an edge one of whose ends the process could not read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth import get_user_model

from vancetope.errors import BadRequest
from vancetope.memory.graph import edges_of, filtered_edges, get_visible_node
from vancetope.memory.items import Source, lookup, write_item, write_new_items
from vancetope.memory.models import EdgeType, MemoryItem, Scope, SourceKind
from vancetope.memory.presenters import edge_data, node_data
from vancetope.memory.scopes import Reach, project_reach, target_from_project
from vancetope.memory.search import search
from vancetope.tenancy.models import Project

DEFAULT_WRITE_SCOPE = Scope.PROJECT
# Edges one graph read answers with at most (newest first).
MAX_EDGES = 50
# What a node's edges need loaded to present their other ends.
EDGE_ENDS = ("from_item", "to_item", "from_chunk__document__project", "to_chunk__document__project")


# (project id, session id, the session owner's id) of a process, asked on first use.
Whereabouts = Callable[[], tuple[int, int, int]]


class MemoryAccess:
    """Loads nothing until an engine or tool uses it: a turn that never touches memory pays
    no query for it."""

    def __init__(self, process_id: str, whereabouts: Whereabouts) -> None:
        self._process_id = process_id
        self._whereabouts = whereabouts
        self._found: tuple[Project, int, Any] | None = None

    @classmethod
    def of(cls, project_id: int, session_pk: int, owner_id: int, process_id: str) -> MemoryAccess:
        return cls(process_id, lambda: (project_id, session_pk, owner_id))

    def _where(self) -> tuple[Project, int, Any]:
        if self._found is None:
            project_id, session_pk, owner_id = self._whereabouts()
            project = Project.objects.select_related("tenant", "group").get(pk=project_id)
            owner = get_user_model().objects.get(pk=owner_id)
            self._found = (project, session_pk, owner)
        return self._found

    @property
    def reach(self) -> Reach:
        project, session_pk, _ = self._where()
        return project_reach(project, session_pk)

    def lookup(self, key: str) -> MemoryItem | None:
        return lookup(self.reach, key)

    def read(self, key: str) -> str | None:
        item = self.lookup(key)
        return item.content if item else None

    def write_item(
        self,
        content: str,
        *,
        key: str | None = None,
        scope: str | None = None,
        tags: list[str] | None = None,
    ) -> MemoryItem:
        project, session_pk, owner = self._where()
        target = target_from_project(
            owner, Scope(scope or DEFAULT_WRITE_SCOPE), project, session_pk
        )
        source = Source(SourceKind.PROCESS, self._process_id)
        return write_item(target, content, source, key=key or "", tags=tags)

    def write_new_items(
        self, entries: list[tuple[str, list[str]]], *, scope: str | None = None
    ) -> list[MemoryItem]:
        """New items without keys, in one statement and one embedding batch (items.py)."""
        project, session_pk, owner = self._where()
        target = target_from_project(
            owner, Scope(scope or DEFAULT_WRITE_SCOPE), project, session_pk
        )
        source = Source(SourceKind.PROCESS, self._process_id)
        return write_new_items(target, entries, source)

    def write(self, content: str, *, key: str | None = None, scope: str | None = None) -> str:
        return self.write_item(content, key=key, scope=scope).public_id

    def search(self, query: str, k: int = 5) -> list[dict[str, Any]]:
        return search(self.reach, query, k)

    def neighbours(
        self, node_id: str, types: list[str] | None = None, limit: int = MAX_EDGES
    ) -> list[dict[str, Any]]:
        """The valid edges at `node_id` (mem_N or doc_N:K), of `types` if given, each with its
        direction and its other end (a 404 for a node the process does not see, a 400 naming
        `types` for an unknown type)."""
        reach = self.reach
        node = get_visible_node(reach, node_id, "nodeId")
        edges = edges_of(reach, node)
        if types:
            edges = edges.filter(type__in=_edge_types(types))
        rows = list(edges.select_related(*EDGE_ENDS).order_by("-pk")[: min(limit, MAX_EDGES)])
        return list(node_data(node, rows)["edges"])

    def edges(
        self, type: str, *, node_id: str | None = None, limit: int = MAX_EDGES
    ) -> list[dict[str, Any]]:
        """The valid edges of `type` the process sees (at `node_id` only, if given), newest
        first."""
        _edge_types([type])
        rows = filtered_edges(self.reach, types=type, node=node_id or None)
        return [edge_data(edge) for edge in rows.order_by("-pk")[: min(limit, MAX_EDGES)]]


def _edge_types(types: list[str]) -> list[str]:
    unknown = [kind for kind in types if kind not in EdgeType.values]
    if unknown or not types:
        raise BadRequest(
            f"types must be some of {', '.join(EdgeType.values)}, not {unknown or types!r}",
            error="types",
            field="types",
        )
    return types
