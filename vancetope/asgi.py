"""ASGI entry: HTTP goes to Django, WebSocket through origin check and auth to the consumer."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vancetope.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from a2a_face.endpoint import A2aEndpoint  # noqa: E402
from gateway.auth import TokenAuthMiddleware, origin_validator  # noqa: E402
from gateway.routing import websocket_urlpatterns  # noqa: E402
from mcp_face.endpoint import McpEndpoint  # noqa: E402
from triggers.webhooks.endpoint import WebhookEndpoint  # noqa: E402
from vancetope.infra.autobahn_logging import plain_autobahn_log_arguments  # noqa: E402
from vancetope.infra.websocket_session import auth_middleware_stack  # noqa: E402

plain_autobahn_log_arguments()

application = ProtocolTypeRouter(
    {
        # The Brain is self-contained: it serves the admin's and the UI's static files itself.
        # An inbound webhook delivery is answered before Django's handler, its body capped
        # before it is read (triggers/webhooks/endpoint.py). MCP clients are served at /mcp
        # (mcp_face/endpoint.py), A2A clients at /a2a/… (a2a_face/endpoint.py).
        "http": McpEndpoint(
            A2aEndpoint(
                WebhookEndpoint(
                    ASGIStaticFilesHandler(django_asgi_app)
                    if settings.VANCETOPE_SERVE_STATIC
                    else django_asgi_app
                )
            )
        ),
        "websocket": origin_validator(
            auth_middleware_stack(TokenAuthMiddleware(URLRouter(websocket_urlpatterns)))
        ),
    }
)
