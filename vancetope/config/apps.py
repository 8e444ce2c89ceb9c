from django.apps import AppConfig


class ConfigConfig(AppConfig):
    name = "vancetope.config"
    label = "config"
    verbose_name = "Settings"

    def ready(self) -> None:
        # The Brain's own keys (llm.*) register themselves on import; engines add theirs
        # from EnginesConfig.ready().
        from vancetope.config import keys  # noqa: F401
