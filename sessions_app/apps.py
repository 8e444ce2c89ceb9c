from django.apps import AppConfig


class SessionsConfig(AppConfig):
    name = "sessions_app"
    label = "brain_sessions"
    verbose_name = "Sessions"

    def ready(self) -> None:
        from sessions_app import memory_sessions

        memory_sessions.register()
