from django.apps import AppConfig


class GatewayConfig(AppConfig):
    """The WebSocket face (docs/architecture.md): the consumer at /ws/brain/, its frame
    handlers, and `manage.py brain`, which serves it. No models."""

    name = "gateway"
    verbose_name = "Gateway"
