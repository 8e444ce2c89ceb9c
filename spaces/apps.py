from django.apps import AppConfig


class SpacesConfig(AppConfig):
    name = "spaces"
    label = "spaces"
    verbose_name = "Thinking spaces"

    def ready(self) -> None:
        # The thinking_* server tools register themselves on import.
        from processes.actions.reports import on_process_settled
        from processes.actions.steer import on_person_message
        from spaces import tools  # noqa: F401
        from spaces.turn_end import node_settled, refuse_read_only

        # A node's turn ended: a dormant node is active now, a control turn that did not
        # finish is unlocked, a return notice waiting for its resting parent is appended.
        on_process_settled(node_settled)
        # A person's chat or steer to a node that is read-only now is a 409, nothing queued.
        on_person_message(refuse_read_only)
