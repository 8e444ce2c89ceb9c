"""REST: /api/tool-health — the health verdicts of the tools in the caller's projects."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from vancetope.api import PAGE_PARAMETERS, Body, Page, errors, paginated
from vancetope.errors import BadRequest
from vancetope.tools.health import visible_tool_health
from vancetope.tools.models import HealthStatus, ToolHealth


class ToolHealthObject(Body):
    """agrajag's last verdict about one tool in one project."""

    projectId: str
    tool: str
    status: HealthStatus
    classification: str
    evidence: str
    checkedAt: str
    # The agrajag process that checked it (none once that process is gone).
    checkedBy: str | None


class ToolHealthPage(Page[ToolHealthObject]):
    """A page of tool health verdicts, by project and tool."""


def tool_health_data(health: ToolHealth) -> dict[str, Any]:
    return {
        "projectId": health.project.public_id,
        "tool": health.tool,
        "status": health.status,
        "classification": health.classification,
        "evidence": health.evidence,
        "checkedAt": health.checked_at.isoformat().replace("+00:00", "Z"),
        "checkedBy": f"tp_{health.checked_by_id}" if health.checked_by_id else None,
    }


class ToolHealthViewSet(viewsets.ViewSet):
    @extend_schema(
        operation_id="tool_health_list",
        parameters=[
            OpenApiParameter("status", str, enum=HealthStatus.values),
            OpenApiParameter("tool", str),
            *PAGE_PARAMETERS,
        ],
        responses={200: ToolHealthPage, **errors(400, 401)},
    )
    def list(self, request: Request) -> Response:
        rows = visible_tool_health(request.user)
        params = request.query_params
        if "status" in params:
            if params["status"] not in HealthStatus.values:
                raise BadRequest(f"status must be one of {', '.join(HealthStatus.values)}")
            rows = rows.filter(status=params["status"])
        if "tool" in params:
            rows = rows.filter(tool=params["tool"])
        return paginated(request, self, rows.order_by("project", "tool"), tool_health_data)
