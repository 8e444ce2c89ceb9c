from django.apps import AppConfig


class EnginesConfig(AppConfig):
    name = "engines"
    label = "engines"
    verbose_name = "Think engines"

    def ready(self) -> None:
        from engines.registry import discover_engines

        discover_engines()
