from django.apps import AppConfig


class SpacesConfig(AppConfig):
    name = "spaces"
    label = "spaces"
    verbose_name = "Thinking spaces"

    def ready(self) -> None:
        # The thinking_* server tools register themselves on import; spaces/receivers.py
        # connects what spaces/ hears of processes/ (a node settled, a person's message).
        from processes.signals import context_built
        from spaces import receivers, tools  # noqa: F401
        from spaces.capability import set_context_space

        # A turn's context gets ctx.space: the node's Handoffs, or None outside a space.
        context_built.connect(set_context_space, dispatch_uid="spaces.context_space")
