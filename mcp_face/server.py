"""The Brain's MCP server: the SDK's MCPServer with the tools, the resources and the
person-scoped change notifications, and its Streamable HTTP session manager."""

from __future__ import annotations

from django.conf import settings
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import SubscriptionsListenRequestParams

from mcp_face.notifications import PersonalListen
from mcp_face.resources import register_resources
from mcp_face.tools import register_tools
from vancetope.infra.mcp_server import lowlevel_server, replace_request_handler
from vancetope.infra.mcp_sessions import PersonCappedSessionManager

INSTRUCTIONS = (
    "Vancetope runs long-lived thinking processes. process_create starts one and answers at "
    "once; a deep think takes minutes: poll process_get (or read vancetope://processes/tp_N) "
    "until its status is CLOSED, and look at inbox_list for questions it asks you."
)


def build_server() -> MCPServer:
    server: MCPServer = MCPServer(
        name="vancetope", instructions=INSTRUCTIONS, version="0.1.0", subscriptions=False
    )
    register_tools(server)
    register_resources(server)
    listen = PersonalListen()
    listen.listen_to_the_domain()
    replace_request_handler(
        server, "subscriptions/listen", SubscriptionsListenRequestParams, listen
    )
    return server


def session_manager(server: MCPServer) -> PersonCappedSessionManager:
    """Stateful sessions, ended after the idle timeout, at most
    VANCETOPE_MCP_SESSIONS_PER_PERSON of one person's at a time (vancetope/infra/mcp_sessions.py).
    The Host header is checked in front of it as Django checks it (ALLOWED_HOSTS,
    mcp_face/endpoint.py), so the SDK's own localhost-only check is off."""
    return PersonCappedSessionManager(
        app=lowlevel_server(server),
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        session_idle_timeout=settings.VANCETOPE_MCP_SESSION_IDLE_SECONDS,
        per_person=settings.VANCETOPE_MCP_SESSIONS_PER_PERSON,
    )
