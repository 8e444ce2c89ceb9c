from django.apps import AppConfig


class EnginesConfig(AppConfig):
    name = "engines"
    label = "engines"
    verbose_name = "Think engines"

    def ready(self) -> None:
        from engines.registry import all_engines, discover_engines
        from vancetope.config.registry import register_engine_settings

        discover_engines()
        # Each engine's overridable defaults become settings in its namespace.
        for engine in all_engines():
            register_engine_settings(
                engine.name, engine.default_settings, engine.setting_descriptions
            )
