"""REST: /api/think-engines — the registry, paginated like every list."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from engines.registry import all_engines
from sessions_app.protocol.outbound import EngineDescriptor
from vancetope.api import PAGE_PARAMETERS, Page, errors, paginated


class EnginePage(Page[EngineDescriptor]):
    """A page of the registered think engines."""


class ThinkEngineList(APIView):
    @extend_schema(
        operation_id="think_engines_list",
        parameters=PAGE_PARAMETERS,
        responses={200: EnginePage, **errors(400, 401)},
    )
    def get(self, request: Request) -> Response:
        return paginated(request, self, all_engines(), lambda engine: engine.describe())
