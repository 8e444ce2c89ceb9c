from django.apps import AppConfig


class ToolsConfig(AppConfig):
    name = "vancetope.tools"
    label = "tools"
    verbose_name = "Tools"

    def ready(self) -> None:
        # Server-side tools register themselves on import.
        from vancetope.tools import builtin  # noqa: F401
