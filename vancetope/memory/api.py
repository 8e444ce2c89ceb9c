"""REST: /api/memory (items, lookup, search), /api/documents and /api/knowledge (the knowledge
graph's edges and nodes) (PROTOCOL second stage).

Everything is limited to what the caller sees (scopes.py); another tenant's id is a 404.
"""

from __future__ import annotations

from django.db.models import Count
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from vancetope.api import PAGE_PARAMETERS, errors, paginated
from vancetope.errors import BadRequest
from vancetope.jsonbody import BodyParser
from vancetope.memory import documents, graph, items
from vancetope.memory.models import EdgeAuthor, EdgeType, Scope, SourceKind
from vancetope.memory.presenters import (
    DocumentObject,
    DocumentPage,
    KnowledgeEdgeObject,
    KnowledgeEdgePage,
    KnowledgeNodeObject,
    LookupObject,
    MemoryItemObject,
    MemoryItemPage,
    SearchResultsObject,
    document_data,
    edge_data,
    item_data,
    node_data,
)
from vancetope.memory.scopes import check_may_change, person_reach, person_target
from vancetope.memory.search import Mode, search
from vancetope.tenancy.services import get_visible_project


class ItemInput(serializers.Serializer):
    scope = serializers.ChoiceField(choices=Scope.values)
    scopeId = serializers.CharField(required=False, allow_blank=True, default="")
    key = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
    content = serializers.CharField(trim_whitespace=False)
    tags = serializers.ListField(child=serializers.CharField(), required=False, default=list)


class ItemChange(serializers.Serializer):
    content = serializers.CharField(trim_whitespace=False)
    tags = serializers.ListField(child=serializers.CharField(), required=False)


class DocumentInput(serializers.Serializer):
    project = serializers.CharField(help_text="the project, proj_…")
    title = serializers.CharField(required=False, allow_blank=True, default="")
    content = serializers.CharField(required=False, trim_whitespace=False)
    mediaType = serializers.CharField(required=False, default="text/markdown")
    file = serializers.FileField(
        required=False, help_text="multipart: a text, Markdown or PDF file (PDF: the pdf extra)"
    )


def _source(request: Request) -> items.Source:
    return items.Source(SourceKind.USER, str(request.user.get_username()))


class MemoryViewSet(viewsets.ViewSet):
    lookup_field = "item_id"
    lookup_value_regex = r"[^/]+"

    @extend_schema(
        operation_id="memory_list",
        parameters=[
            OpenApiParameter("scope", str, enum=Scope.values),
            OpenApiParameter("project", str, description="from this project upwards, proj_…"),
            OpenApiParameter("session", str, description="from this session upwards, sess_…"),
            OpenApiParameter("key", str),
            OpenApiParameter("includeInvalid", bool, description="superseded ones too"),
            *PAGE_PARAMETERS,
        ],
        responses={200: MemoryItemPage, **errors(400, 401, 404)},
    )
    def list(self, request: Request) -> Response:
        params = request.query_params
        reach = person_reach(
            request.user, project=params.get("project", ""), session=params.get("session", "")
        )
        rows = items.visible_items(reach, include_invalid=params.get("includeInvalid") == "true")
        if scope := params.get("scope"):
            if scope not in Scope.values:
                raise BadRequest(f"scope must be one of {', '.join(Scope.values)}", error="scope")
            rows = rows.filter(scope=scope)
        if "key" in params:
            rows = rows.filter(key=params["key"])
        return paginated(request, self, rows, item_data)

    @extend_schema(
        request=ItemInput, responses={201: MemoryItemObject, **errors(400, 401, 403, 404)}
    )
    def create(self, request: Request) -> Response:
        body = ItemInput(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        target = person_target(request.user, data["scope"], data["scopeId"])
        item = items.write_item(
            target, data["content"], _source(request), key=data["key"], tags=data["tags"]
        )
        return Response(item_data(item), status=201)

    @extend_schema(responses={200: MemoryItemObject, **errors(401, 404)})
    def retrieve(self, request: Request, item_id: str) -> Response:
        return Response(item_data(items.get_visible_item(person_reach(request.user), item_id)))

    @extend_schema(
        request=ItemChange, responses={200: MemoryItemObject, **errors(400, 401, 403, 404)}
    )
    def partial_update(self, request: Request, item_id: str) -> Response:
        """A new version of the item (the answer); the old one is kept, superseded."""
        body = ItemChange(data=request.data)
        body.is_valid(raise_exception=True)
        item = items.get_visible_item(person_reach(request.user), item_id)
        check_may_change(request.user, item.scope, item.tenant_id, item.owner_id)
        new = items.supersede_item(
            item, body.validated_data["content"], _source(request), body.validated_data.get("tags")
        )
        return Response(item_data(new))

    @extend_schema(request=None, responses={200: MemoryItemObject, **errors(401, 403, 404)})
    def destroy(self, request: Request, item_id: str) -> Response:
        """Invalidates the item (validTo set): it leaves lookups, lists and searches."""
        item = items.get_visible_item(person_reach(request.user), item_id)
        check_may_change(request.user, item.scope, item.tenant_id, item.owner_id)
        reason = f"deleted by {request.user.get_username()}"
        return Response(item_data(items.invalidate_item(item, reason)))

    @extend_schema(
        operation_id="memory_lookup",
        parameters=[
            OpenApiParameter("key", str, required=True),
            OpenApiParameter("session", str, description="from this session upwards, sess_…"),
            OpenApiParameter("project", str, description="from this project upwards, proj_…"),
        ],
        responses={200: LookupObject, **errors(400, 401, 404)},
    )
    @action(detail=False, methods=["get"])
    def lookup(self, request: Request) -> Response:
        params = request.query_params
        if not params.get("session") and not params.get("project"):
            raise BadRequest("lookup needs session or project", error="session")
        reach = person_reach(
            request.user,
            project=params.get("project", ""),
            session=params.get("session", ""),
            own_sessions=False,
        )
        key = params.get("key", "")
        item = items.lookup(reach, key)
        data = {
            "key": key,
            "found": item is not None,
            "scope": item.scope if item else None,
            "item": item_data(item) if item else None,
        }
        return Response(LookupObject.model_validate(data).model_dump(mode="json"))

    @extend_schema(
        operation_id="memory_search",
        parameters=[
            OpenApiParameter("q", str, required=True),
            OpenApiParameter("k", int, description="how many results (1–50, default 5)"),
            OpenApiParameter("scope", str, enum=Scope.values),
            OpenApiParameter("project", str, description="proj_…; default: every project seen"),
            OpenApiParameter("session", str, description="sess_… (its session items too)"),
            OpenApiParameter("mode", str, enum=[mode.value for mode in Mode]),
        ],
        responses={200: SearchResultsObject, **errors(400, 401, 404)},
    )
    @action(detail=False, methods=["get"])
    def search(self, request: Request) -> Response:
        params = request.query_params
        reach = person_reach(
            request.user, project=params.get("project", ""), session=params.get("session", "")
        )
        k_text = params.get("k", "5")
        if not k_text.isascii() or not k_text.isdigit():
            raise BadRequest("k must be a whole number", error="k")
        try:
            mode = Mode(params.get("mode", Mode.HYBRID))
        except ValueError:
            raise BadRequest("mode must be hybrid, lexical or dense", error="mode") from None
        results = search(
            reach, params.get("q", ""), int(k_text), scope=params.get("scope"), mode=mode
        )
        body = SearchResultsObject.model_validate({"results": results})
        return Response(body.model_dump(mode="json"))


class DocumentViewSet(viewsets.ViewSet):
    lookup_field = "document_id"
    lookup_value_regex = r"[^/]+"
    parser_classes = [BodyParser, MultiPartParser]

    @extend_schema(
        operation_id="documents_list",
        parameters=[OpenApiParameter("project", str), *PAGE_PARAMETERS],
        responses={200: DocumentPage, **errors(400, 401, 404)},
    )
    def list(self, request: Request) -> Response:
        rows = documents.visible_documents(request.user, request.query_params.get("project"))
        rows = rows.annotate(chunk_count=Count("chunks"))
        return paginated(request, self, rows, document_data)

    @extend_schema(
        request={"application/json": DocumentInput, "multipart/form-data": DocumentInput},
        responses={201: DocumentObject, **errors(400, 401, 404)},
    )
    def create(self, request: Request) -> Response:
        body = DocumentInput(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        project = get_visible_project(request.user, data["project"])
        title, media_type = data["title"], data["mediaType"]
        if upload := data.get("file"):
            document = documents.create_uploaded_document(
                project,
                title,
                media_type,
                upload.name or "file",
                upload.content_type,
                upload.read(),
                request.user,
            )
            return Response(document_data(document), status=201)
        if "content" in data:
            content = data["content"]
        else:
            raise BadRequest("send content or a file", error="content")
        document = documents.create_document(project, title, content, media_type, request.user)
        return Response(document_data(document), status=201)

    @extend_schema(responses={200: DocumentObject, **errors(401, 404)})
    def retrieve(self, request: Request, document_id: str) -> Response:
        return Response(document_data(documents.get_visible_document(request.user, document_id)))

    @extend_schema(request=None, responses={204: None, **errors(401, 404)})
    def destroy(self, request: Request, document_id: str) -> Response:
        documents.delete_document(documents.get_visible_document(request.user, document_id))
        return Response(status=204)


class EdgeInput(serializers.Serializer):
    type = serializers.ChoiceField(choices=EdgeType.values)
    fromId = serializers.CharField(help_text="a node: mem_N or doc_N:K")
    toId = serializers.CharField(help_text="a node: mem_N or doc_N:K")
    confidence = serializers.FloatField(min_value=0.0, max_value=1.0, required=False, default=1.0)
    reasoning = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=graph.MAX_REASONING
    )


class InvalidateInput(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)


class KnowledgeEdgeViewSet(viewsets.ViewSet):
    lookup_field = "edge_id"
    lookup_value_regex = r"[^/]+"

    @extend_schema(
        operation_id="knowledge_edges_list",
        parameters=[
            OpenApiParameter(
                "type", str, description=f"one or more of {', '.join(EdgeType.values)}, by commas"
            ),
            OpenApiParameter("node", str, description="the edges at this node, mem_N or doc_N:K"),
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
            types=params.get("type", ""),
            node=params.get("node", ""),
            created_by=params.get("createdBy", ""),
            include_invalid=graph.parse_flag(params.get("includeInvalid"), "includeInvalid"),
        )
        return paginated(request, self, rows, edge_data)

    @extend_schema(
        operation_id="knowledge_edges_create",
        request=EdgeInput,
        responses={201: KnowledgeEdgeObject, 200: KnowledgeEdgeObject, **errors(400, 401, 404)},
    )
    def create(self, request: Request) -> Response:
        """A person links two nodes they see (createdBy user). The same valid edge again is
        answered 200 as it is."""
        body = EdgeInput(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        edge, created = graph.link_nodes(
            person_reach(request.user),
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
        responses={200: KnowledgeEdgeObject, **errors(400, 401, 404, 409)},
    )
    @action(detail=True, methods=["post"])
    def invalidate(self, request: Request, edge_id: str) -> Response:
        """Ends the edge's validity (validTo set); the edge stays, listed with includeInvalid."""
        body = InvalidateInput(data=request.data)
        body.is_valid(raise_exception=True)
        edge = graph.get_visible_edge(person_reach(request.user), edge_id)
        reason = body.validated_data["reason"] or f"invalidated by {request.user.get_username()}"
        return Response(edge_data(graph.invalidate_visible_edge(edge, reason)))


class KnowledgeNodeViewSet(viewsets.ViewSet):
    lookup_field = "node_id"
    lookup_value_regex = r"[^/]+"

    @extend_schema(
        operation_id="knowledge_nodes_retrieve",
        parameters=[OpenApiParameter("includeInvalid", bool, description="invalid edges too")],
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
