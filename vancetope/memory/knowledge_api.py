"""REST: /api/knowledge (the knowledge graph's edges and nodes) (PROTOCOL second stage).

Everything is limited to what the caller sees (scopes.py); another tenant's id is a 404.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from vancetope.api import (
    PAGE_PARAMETERS,
    InputSerializer,
    errors,
    paginated,
)
from vancetope.memory import graph
from vancetope.memory.models import EdgeAuthor, EdgeType
from vancetope.memory.presenters import (
    KnowledgeEdgeObject,
    KnowledgeEdgePage,
    KnowledgeNodeObject,
    edge_data,
    node_data,
)
from vancetope.memory.scopes import person_reach


@extend_schema_field({"type": "string", "pattern": graph.NODE_ID_PATTERN})
class NodeIdField(serializers.CharField):
    """A node's id; the document states its shape, graph.get_visible_node refuses another
    (a 400 naming the field)."""


class EdgeInput(InputSerializer):
    type = serializers.ChoiceField(choices=EdgeType.values)
    fromId = NodeIdField(help_text="a node: mem_N or doc_N:K")
    toId = NodeIdField(help_text="a node: mem_N or doc_N:K")
    confidence = serializers.FloatField(min_value=0.0, max_value=1.0, required=False, default=1.0)
    reasoning = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=graph.MAX_REASONING
    )


class InvalidateInput(InputSerializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)


class KnowledgeEdgeViewSet(viewsets.ViewSet):
    lookup_field = "edge_id"
    lookup_value_regex = r"[^/]+"

    @extend_schema(
        operation_id="knowledge_edges_list",
        parameters=[
            OpenApiParameter(
                "type",
                str,
                description=f"one or more of {', '.join(EdgeType.values)}, by commas",
                pattern=graph.EDGE_TYPES_PATTERN,
            ),
            OpenApiParameter(
                "node",
                str,
                description="the edges at this node, mem_N or doc_N:K",
                pattern=graph.NODE_ID_PATTERN,
            ),
            OpenApiParameter("createdBy", str, enum=EdgeAuthor.values),
            OpenApiParameter("project", str, description="from this project upwards, proj_…"),
            OpenApiParameter("includeInvalid", bool, description="invalidated ones too"),
            *PAGE_PARAMETERS,
        ],
        responses={200: KnowledgeEdgePage, **errors(400, 401, 404)},
    )
    def list(self, request: Request) -> Response:
        """The edges both of whose ends the caller sees, newest first."""
        params = request.query_params
        reach = person_reach(request.user, project=params.get("project", ""))
        rows = graph.filtered_edges(
            reach,
            types=params.get("type"),
            node=params.get("node"),
            created_by=params.get("createdBy"),
            include_invalid=graph.parse_flag(params.get("includeInvalid"), "includeInvalid"),
        )
        return paginated(request, self, rows, edge_data)

    @extend_schema(
        operation_id="knowledge_edges_create",
        request=EdgeInput,
        responses={
            201: KnowledgeEdgeObject,
            200: KnowledgeEdgeObject,
            **errors(400, 401, 403, 404),
        },
    )
    def create(self, request: Request) -> Response:
        """A person links two nodes they see (createdBy user). The same valid edge again is
        answered 200 as it is."""
        body = EdgeInput(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        edge, created = graph.link_nodes(
            person_reach(request.user),
            request.user,
            data["type"],
            data["fromId"],
            data["toId"],
            data["confidence"],
            data["reasoning"],
            graph.Author(EdgeAuthor.USER, str(request.user.get_username())),
        )
        return Response(edge_data(edge), status=201 if created else 200)

    @extend_schema(
        operation_id="knowledge_edges_retrieve",
        responses={200: KnowledgeEdgeObject, **errors(401, 404)},
    )
    def retrieve(self, request: Request, edge_id: str) -> Response:
        """One edge, valid or not, if the caller sees both of its ends."""
        return Response(edge_data(graph.get_visible_edge(person_reach(request.user), edge_id)))

    @extend_schema(
        operation_id="knowledge_edges_invalidate",
        request=InvalidateInput,
        responses={200: KnowledgeEdgeObject, **errors(400, 401, 403, 404, 409)},
    )
    @action(detail=True, methods=["post"])
    def invalidate(self, request: Request, edge_id: str) -> Response:
        """Ends the edge's validity (validTo set); the edge stays, listed with includeInvalid."""
        body = InvalidateInput(data=request.data)
        body.is_valid(raise_exception=True)
        edge = graph.get_visible_edge(person_reach(request.user), edge_id)
        reason = body.validated_data["reason"] or f"invalidated by {request.user.get_username()}"
        return Response(edge_data(graph.invalidate_visible_edge(edge, request.user, reason)))


class KnowledgeNodeViewSet(viewsets.ViewSet):
    lookup_field = "node_id"
    lookup_value_regex = r"[^/]+"

    @extend_schema(
        operation_id="knowledge_nodes_retrieve",
        parameters=[
            OpenApiParameter("node_id", str, OpenApiParameter.PATH, pattern=graph.NODE_ID_PATTERN),
            OpenApiParameter("includeInvalid", bool, description="invalid edges too"),
        ],
        responses={200: KnowledgeNodeObject, **errors(400, 401, 404)},
    )
    def retrieve(self, request: Request, node_id: str) -> Response:
        """A memory item or document chunk the caller sees, with its visible edges."""
        reach = person_reach(request.user)
        node = graph.get_visible_node(reach, node_id)
        include_invalid = graph.parse_flag(
            request.query_params.get("includeInvalid"), "includeInvalid"
        )
        edges = graph.edges_of(reach, node, include_invalid=include_invalid).select_related(
            "from_item", "to_item", "from_chunk__document__project", "to_chunk__document__project"
        )
        return Response(node_data(node, list(edges)))
