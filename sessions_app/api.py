"""REST: /api/sessions — the caller's sessions."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from protocol.outbound import SessionObject
from sessions_app import services
from sessions_app.models import ClientType, SessionStatus
from sessions_app.presenters import session_data
from vancetope.api import PAGE_PARAMETERS, Page, errors, paginated
from vancetope.errors import BadRequest
from vancetope.ids import parse_public_id

TRUE_WORDS = {"1", "true", "yes"}
FALSE_WORDS = {"0", "false", "no"}


class SessionPage(Page[SessionObject]):
    """A page of sessions, newest first."""


class SessionViewSet(viewsets.ViewSet):
    lookup_field = "session_id"
    lookup_value_regex = r"[^/]+"

    @extend_schema(
        operation_id="sessions_list",
        parameters=[
            OpenApiParameter("status", str, enum=SessionStatus.values),
            OpenApiParameter("clientType", str, enum=ClientType.values),
            OpenApiParameter("system", bool),
            *PAGE_PARAMETERS,
        ],
        responses={200: SessionPage, **errors(400, 401)},
    )
    def list(self, request: Request) -> Response:
        rows = services.visible_sessions(request.user)
        params = request.query_params
        if "status" in params:
            if params["status"] not in SessionStatus.values:
                raise BadRequest(f"status must be one of {', '.join(SessionStatus.values)}")
            rows = rows.filter(status=params["status"])
        if "clientType" in params:
            if params["clientType"] not in ClientType.values:
                raise BadRequest(f"clientType must be one of {', '.join(ClientType.values)}")
            rows = rows.filter(client_type=params["clientType"])
        if "system" in params:
            system = params["system"].lower()
            if system not in TRUE_WORDS | FALSE_WORDS:
                raise BadRequest(f"system must be true or false, not {params['system']!r}")
            rows = rows.filter(system=system in TRUE_WORDS)
        return paginated(request, self, rows.order_by("-pk"), session_data)

    @extend_schema(responses={200: SessionObject, **errors(401, 404)})
    def retrieve(self, request: Request, session_id: str) -> Response:
        pk = parse_public_id("sess", session_id, "session")
        return Response(session_data(services.get_visible_session(request.user, pk)))
