from django.apps import AppConfig


class SessionsConfig(AppConfig):
    name = "sessions_app"
    label = "brain_sessions"
    verbose_name = "Sessions"

    def ready(self) -> None:
        # Answers the memory kernel's session_wanted signal.
        from sessions_app import memory_sessions  # noqa: F401
