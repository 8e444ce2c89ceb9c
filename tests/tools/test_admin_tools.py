"""MCP servers are edited in the admin; tool calls and health are read there."""

from __future__ import annotations

import pytest
from django.urls import reverse

from vancetope.tools.models import McpServer

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_mcp_server_is_added_and_changed_in_the_admin(operator, alice):
    # when
    response = operator.post(
        reverse("admin:tools_mcpserver_add"),
        {
            "project": alice.project.pk,
            "name": "time",
            "enabled": "on",
            "tool_prefix": "",
            "transport": "stdio",
            "command": "mcp-server-time",
            "args": '["--local-timezone", "UTC"]',
            "env": '{"TZ": "UTC"}',
            "url": "",
        },
    )
    # then
    assert response.status_code == 302, response.content
    server = McpServer.objects.get()
    assert (server.command, server.args, server.env) == (
        "mcp-server-time",
        ["--local-timezone", "UTC"],
        {"TZ": "UTC"},
    )
    page = operator.get(reverse("admin:tools_mcpserver_change", args=[server.pk]))
    assert page.status_code == 200


@pytest.mark.parametrize(
    "name", ["tools_toolcall", "tools_toolhealth", "tools_tooldiagnosis", "tools_mcpserver"]
)
def test_tool_changelists_open(operator, name):
    assert operator.get(reverse(f"admin:{name}_changelist")).status_code == 200
