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


def _plain_autobahn_log_arguments() -> None:
    """autobahn (daphne's WebSocket library) builds the arguments of its debug log lines, a
    qualified name via inspect and click colours, for every frame it sends and receives,
    whether debug logging is on or not: about a tenth of the server loop's time in a chat. Its
    helpers for that now hand the values to the log as they are."""
    try:
        from autobahn.twisted import websocket as twisted_websocket
        from autobahn.websocket import protocol
    except ImportError:  # another ASGI server
        return

    def as_is(value: object) -> object:
        return value

    for module in (protocol, twisted_websocket):
        module.hltype = module.hlval = as_is  # type: ignore[attr-defined]


_plain_autobahn_log_arguments()

application = ProtocolTypeRouter(
    {
        # The Brain is self-contained: it serves the admin's and the UI's static files itself.
        "http": ASGIStaticFilesHandler(django_asgi_app)
        if settings.VANCETOPE_SERVE_STATIC
        else django_asgi_app,
        "websocket": origin_validator(
            AuthMiddlewareStack(TokenAuthMiddleware(URLRouter(websocket_urlpatterns)))
        ),
    }
)
