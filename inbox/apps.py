from django.apps import AppConfig


class InboxConfig(AppConfig):
    name = "inbox"
    label = "inbox"
    verbose_name = "Inbox"

    def ready(self) -> None:
        # The inbox_post server tool registers itself on import.
        from inbox import tools  # noqa: F401
