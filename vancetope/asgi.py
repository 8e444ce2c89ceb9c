"""ASGI entry: HTTP goes to Django, WebSocket through origin check and auth to the consumer."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vancetope.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from sessions_app.auth import TokenAuthMiddleware, origin_validator  # noqa: E402
from sessions_app.routing import websocket_urlpatterns  # noqa: E402
from triggers.webhook_endpoint import WebhookEndpoint  # noqa: E402
from vancetope.infra.autobahn_logging import plain_autobahn_log_arguments  # noqa: E402

plain_autobahn_log_arguments()

application = ProtocolTypeRouter(
    {
        # The Brain is self-contained: it serves the admin's and the UI's static files itself.
        # An inbound webhook delivery is answered before Django's handler, its body capped
        # before it is read (triggers/webhook_endpoint.py).
        "http": WebhookEndpoint(
            ASGIStaticFilesHandler(django_asgi_app)
            if settings.VANCETOPE_SERVE_STATIC
            else django_asgi_app
        ),
        "websocket": origin_validator(
            AuthMiddlewareStack(TokenAuthMiddleware(URLRouter(websocket_urlpatterns)))
        ),
    }
)
