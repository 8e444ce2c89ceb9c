"""REST: /api/think-engines — the registry, paginated like every list."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from engines.registry import all_engines
from vancetope.api import paginated


class ThinkEngineList(APIView):
    @extend_schema(operation_id="think_engines_list", responses={200: dict})
    def get(self, request: Request) -> Response:
        return paginated(request, self, all_engines(), lambda engine: engine.describe())
