"""REST: /api/spaces — the caller's thinking spaces, newest first, and one space whole."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from protocol.outbound import ThinkingSpaceObject
from spaces.presenters import space_data
from spaces.store import load, space_by_public_id, visible_spaces
from vancetope.api import PAGE_PARAMETERS, Page, errors, paginated


class SpacePage(Page[ThinkingSpaceObject]):
    """A page of thinking spaces, newest first."""


class SpaceViewSet(viewsets.ViewSet):
    lookup_field = "space_id"
    lookup_value_regex = r"[^/]+"

    @extend_schema(
        operation_id="spaces_list",
        parameters=[*PAGE_PARAMETERS],
        responses={200: SpacePage, **errors(400, 401)},
    )
    def list(self, request: Request) -> Response:
        return paginated(request, self, visible_spaces(request.user), space_data)

    @extend_schema(responses={200: ThinkingSpaceObject, **errors(401, 404, 409)})
    def retrieve(self, request: Request, space_id: str) -> Response:
        snapshot = load(space_by_public_id(request.user, space_id).pk)
        return Response(space_data(snapshot.space, snapshot.nodes))
