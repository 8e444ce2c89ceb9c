"""REST: /api/inbox — the caller's items (filters status, kind, process), one item, and the
answer and dismiss commands (409 when the item is no longer OPEN, or has nothing to answer)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from inbox import services
from inbox.models import InboxKind, InboxStatus
from inbox.presenters import item_data
from protocol.outbound import InboxAnsweredData, InboxItemData, InboxItemObject
from vancetope.api import PAGE_PARAMETERS, InputSerializer, Page, errors, paginated
from vancetope.ids import public_id_pattern


def _shape(**properties: Any) -> dict[str, Any]:
    required = [name for name, schema in properties.items() if "null" not in schema["type"]]
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


TEXT = {"type": "string", "minLength": 1}
NULL = {"type": "null"}


# The answer of each kind that takes one (inbox/answers.py): the item's kind says which.
@extend_schema_field(
    {
        "oneOf": [
            _shape(
                decision={"type": "string", "enum": ["approve", "reject"]},
                comment={"type": ["string", "null"]},
            ),
            _shape(text=TEXT, choice=NULL),
            _shape(choice=TEXT, text=NULL),
        ]
    }
)
class AnswerField(serializers.DictField):
    pass


class AnswerInput(InputSerializer):
    answer = AnswerField(
        help_text='APPROVAL: {"decision": "approve" or "reject", "comment"?}; '
        'QUESTION: {"text"} or {"choice"} (one of the item\'s options)'
    )


class InboxPage(Page[InboxItemObject]):
    """A page of inbox items, newest first."""


class InboxViewSet(viewsets.ViewSet):
    lookup_field = "item_id"
    lookup_value_regex = r"[^/]+"

    @extend_schema(
        operation_id="inbox_list",
        parameters=[
            OpenApiParameter("status", str, enum=InboxStatus.values),
            OpenApiParameter("kind", str, enum=InboxKind.values),
            OpenApiParameter(
                "process",
                str,
                description="the origin process, tp_…",
                pattern=public_id_pattern("tp"),
            ),
            *PAGE_PARAMETERS,
        ],
        responses={200: InboxPage, **errors(400, 401)},
    )
    def list(self, request: Request) -> Response:
        params = request.query_params
        rows = services.filtered_items(
            request.user,
            status=params.get("status"),
            kind=params.get("kind"),
            process=params.get("process"),
        )
        return paginated(request, self, rows, item_data)

    @extend_schema(responses={200: InboxItemObject, **errors(401, 404)})
    def retrieve(self, request: Request, item_id: str) -> Response:
        return Response(item_data(services.get_visible_item(request.user, item_id)))

    @extend_schema(
        request=AnswerInput, responses={200: InboxAnsweredData, **errors(400, 401, 404, 409)}
    )
    @action(detail=True, methods=["post"])
    def answer(self, request: Request, item_id: str) -> Response:
        body = AnswerInput(data=request.data)
        body.is_valid(raise_exception=True)
        answered = services.do_answer(request.user, item_id, body.validated_data["answer"])
        data = {"item": item_data(answered.item), "delivered": answered.delivered}
        return Response(InboxAnsweredData.model_validate(data).model_dump(mode="json"))

    @extend_schema(request=None, responses={200: InboxItemData, **errors(401, 404, 409)})
    @action(detail=True, methods=["post"])
    def dismiss(self, request: Request, item_id: str) -> Response:
        item = services.dismiss_item(request.user, item_id)
        return Response(
            InboxItemData.model_validate({"item": item_data(item)}).model_dump(mode="json")
        )
