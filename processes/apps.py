from typing import Any

from django.apps import AppConfig


class ProcessesConfig(AppConfig):
    name = "processes"
    label = "processes"
    verbose_name = "Think processes"

    def ready(self) -> None:
        from sessions_app.signals import tools_registered

        # A tool agrajag found DOWN, offered again by a person's client: probed again.
        tools_registered.connect(_tools_registered, dispatch_uid="processes.tools_offered_again")


def _tools_registered(sender: Any, session: Any, tools: list[str], **kwargs: Any) -> None:
    from processes.actions.client_waits import wake_waiting_for_client
    from processes.actions.service_events import tools_offered_again

    # A task that stopped at a client tool because no client offered it goes on now.
    wake_waiting_for_client(session.pk, tools)
    tools_offered_again(session.project_id, session.owner_id, session.public_id, tools)
