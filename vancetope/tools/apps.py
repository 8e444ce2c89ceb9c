from django.apps import AppConfig


class ToolsConfig(AppConfig):
    name = "vancetope.tools"
    label = "tools"
    verbose_name = "Tools"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        # Server-side tools register themselves on import.
        from vancetope.tools import builtin  # noqa: F401
        from vancetope.tools.health import raise_health_revision
        from vancetope.tools.models import ToolHealth

        # Every write of a verdict raises the revision the lanes' caches are keyed by.
        post_save.connect(raise_health_revision, sender=ToolHealth, dispatch_uid="tool-health")
        post_delete.connect(raise_health_revision, sender=ToolHealth, dispatch_uid="tool-health")
