from django.apps import AppConfig


class InboxConfig(AppConfig):
    name = "inbox"
    label = "inbox"
    verbose_name = "Inbox"

    def ready(self) -> None:
        # The inbox_post server tool registers itself on import.
        from inbox import tools  # noqa: F401
        from inbox.services import take_back_items
        from processes.actions.undo import on_turn_undone

        # An undo of a turn dismisses the items the turn posted that are still OPEN.
        on_turn_undone(take_back_items)
