from django.apps import AppConfig


class InboxConfig(AppConfig):
    name = "inbox"
    label = "inbox"
    verbose_name = "Inbox"

    def ready(self) -> None:
        # The inbox_post server tool registers itself on import; inbox/receivers.py connects
        # what the inbox hears of processes/ (an undone turn).
        from inbox import receivers, tools  # noqa: F401
        from inbox.capability import set_context_inbox
        from processes.signals import context_built

        # A turn's context gets ctx.inbox when its process may post.
        context_built.connect(set_context_inbox, dispatch_uid="inbox.context_inbox")
