"""REST: /api/think-engines — the registry."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from engines.registry import all_engines


class ThinkEngineList(APIView):
    @extend_schema(responses={200: dict})
    def get(self, request: Request) -> Response:
        return Response({"engines": [engine.describe() for engine in all_engines()]})
