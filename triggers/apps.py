from django.apps import AppConfig


class TriggersConfig(AppConfig):
    name = "triggers"
    label = "triggers"
    verbose_name = "Triggers, runs and notifications"

    def ready(self) -> None:
        # processes/ and inbox/ never import triggers/: a run hears its processes settle, a
        # person's run log hears the lane's commits, approvals hear posted and answered items,
        # all through their signals (triggers/receivers.py connects them on import).
        from triggers import receivers  # noqa: F401
