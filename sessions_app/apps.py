from django.apps import AppConfig


class SessionsConfig(AppConfig):
    name = "sessions_app"
    label = "brain_sessions"
    verbose_name = "Sessions"
