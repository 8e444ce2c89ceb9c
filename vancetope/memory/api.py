"""REST: /api/memory (items, lookup, search) and /api/documents (PROTOCOL second stage); the
knowledge graph's are in knowledge_api.py.

Everything is limited to what the caller sees (scopes.py); another tenant's id is a 404.
"""

from __future__ import annotations

from typing import Annotated, Any

from django.db.models import Count
from drf_spectacular.utils import OpenApiParameter, extend_schema
from pydantic import RootModel, WithJsonSchema
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from vancetope.api import (
    PAGE_PARAMETERS,
    InputSerializer,
    PatternField,
    TextField,
    change_body,
    errors,
    paginated,
)
from vancetope.errors import BadRequest
from vancetope.ids import public_id_pattern
from vancetope.jsonbody import BodyParser
from vancetope.memory import documents, graph, items
from vancetope.memory.models import Scope, SourceKind
from vancetope.memory.presenters import (
    DocumentObject,
    DocumentPage,
    LookupObject,
    MemoryItemObject,
    MemoryItemPage,
    SearchResultsObject,
    document_data,
    item_data,
)
from vancetope.memory.scopes import check_may_change, person_reach, person_target
from vancetope.memory.search import MAX_K, Mode, search
from vancetope.openapi import NOT_BLANK
from vancetope.tenancy.services import get_visible_project, require_project_admin


class ItemInput(InputSerializer):
    scope = serializers.ChoiceField(choices=Scope.values)
    scopeId = TextField(required=False, allow_blank=True, default="")
    key = TextField(required=False, allow_blank=True, default="", max_length=200)
    content = PatternField(NOT_BLANK, trim_whitespace=False, max_length=items.MAX_CONTENT)
    tags = serializers.ListField(child=TextField(), required=False, default=list)


def _item_body(scope: str, scope_id: dict[str, Any] | None) -> dict[str, Any]:
    """The body of a write at `scope`, with its scopeId (None: may be left out)."""
    text = {"type": "string", "pattern": NOT_BLANK}
    properties = {
        "scope": {"type": "string", "const": scope},
        "scopeId": scope_id or {"type": "string"},
        "key": {"type": "string", "maxLength": 200},
        "content": {**text, "maxLength": items.MAX_CONTENT},
        "tags": {"type": "array", "items": text},
    }
    required = ["scope", "content", *(["scopeId"] if scope_id else [])]
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


class ItemBody(RootModel[dict[str, Any]]):
    """A memory item to write: its scope and where (scopeId: a session's sess_ id, a group's
    grp_ id, a project's proj_ id (left out: your project, when you are in exactly one) or a
    tenant's slug (left out: yours))."""

    root: Annotated[
        dict[str, Any],
        WithJsonSchema(
            {
                "oneOf": [
                    _item_body("session", {"type": "string", "pattern": public_id_pattern("sess")}),
                    _item_body("group", {"type": "string", "pattern": public_id_pattern("grp")}),
                    _item_body("project", None),
                    _item_body("tenant", None),
                ]
            }
        ),
    ]


class ItemChange(InputSerializer):
    # Omitted: the content stays (a PATCH of the tags alone).
    content = PatternField(
        NOT_BLANK, trim_whitespace=False, max_length=items.MAX_CONTENT, required=False
    )
    tags = serializers.ListField(child=TextField(), required=False)


class DocumentText(InputSerializer):
    """A document sent as JSON: its text."""

    project = serializers.CharField(help_text="the project, proj_…")
    title = serializers.CharField(required=False, allow_blank=True, default="")
    content = serializers.CharField(trim_whitespace=False)
    mediaType = serializers.CharField(required=False, default="text/markdown")


class DocumentUpload(InputSerializer):
    """A document sent as multipart/form-data: a file."""

    project = serializers.CharField(help_text="the project, proj_…")
    title = serializers.CharField(required=False, allow_blank=True, default="")
    mediaType = serializers.CharField(required=False, default="text/markdown")
    file = serializers.FileField(
        help_text="a UTF-8 text or Markdown file, or a PDF (the pdf extra)"
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
        rows = items.visible_items(
            reach, include_invalid=graph.parse_flag(params.get("includeInvalid"), "includeInvalid")
        )
        if (scope := params.get("scope")) is not None:
            if scope not in Scope.values:
                raise BadRequest(
                    f"scope must be one of {', '.join(Scope.values)}", error="scope", field="scope"
                )
            rows = rows.filter(scope=scope)
        if "key" in params:
            rows = rows.filter(key=params["key"])
        return paginated(request, self, rows, item_data)

    @extend_schema(
        request=ItemBody, responses={201: MemoryItemObject, **errors(400, 401, 403, 404)}
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
        request=ItemChange, responses={200: MemoryItemObject, **errors(400, 401, 403, 404, 409)}
    )
    def partial_update(self, request: Request, item_id: str) -> Response:
        """A new version of the item (the answer) with the content and tags given (the others
        kept); the old one is kept, superseded. Nothing changed: the item as it is."""
        body = ItemChange(data=change_body(request))
        body.is_valid(raise_exception=True)
        item = items.get_visible_item(person_reach(request.user), item_id)
        check_may_change(request.user, item)
        data = body.validated_data
        content = data.get("content", item.content)
        new = items.supersede_item(item, content, _source(request), data.get("tags"))
        return Response(item_data(new))

    @extend_schema(request=None, responses={200: MemoryItemObject, **errors(401, 403, 404)})
    def destroy(self, request: Request, item_id: str) -> Response:
        """Invalidates the item (validTo set): it leaves lookups, lists and searches."""
        item = items.get_visible_item(person_reach(request.user), item_id)
        check_may_change(request.user, item)
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
            raise BadRequest("lookup needs session or project", error="session", field="session")
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
            OpenApiParameter(
                "q",
                {"type": "string", "pattern": NOT_BLANK},
                required=True,
                description="what to look for: not blank",
            ),
            OpenApiParameter(
                "k",
                {"type": "integer", "minimum": 1, "maximum": MAX_K},
                description=f"how many results (1–{MAX_K}, default 5)",
            ),
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
            raise BadRequest("k must be a whole number", error="k", field="k")
        try:
            mode = Mode(params.get("mode", Mode.HYBRID))
        except ValueError:
            raise BadRequest(
                "mode must be hybrid, lexical or dense", error="mode", field="mode"
            ) from None
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
        request={"application/json": DocumentText, "multipart/form-data": DocumentUpload},
        responses={201: DocumentObject, **errors(400, 401, 403, 404)},
    )
    def create(self, request: Request) -> Response:
        multipart = request.content_type.startswith("multipart/form-data")
        body = (DocumentUpload if multipart else DocumentText)(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        project = get_visible_project(request.user, data["project"])
        require_project_admin(request.user, project, "upload documents")
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
        document = documents.create_document(
            project, title, data["content"], media_type, request.user
        )
        return Response(document_data(document), status=201)

    @extend_schema(responses={200: DocumentObject, **errors(401, 404)})
    def retrieve(self, request: Request, document_id: str) -> Response:
        return Response(document_data(documents.get_visible_document(request.user, document_id)))

    @extend_schema(request=None, responses={204: None, **errors(401, 403, 404)})
    def destroy(self, request: Request, document_id: str) -> Response:
        document = documents.get_visible_document(request.user, document_id)
        require_project_admin(request.user, document.project, "delete documents")
        documents.delete_document(document)
        return Response(status=204)
