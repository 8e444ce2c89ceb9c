from django.apps import AppConfig


class TriggersConfig(AppConfig):
    name = "triggers"
    label = "triggers"
    verbose_name = "Triggers, runs and notifications"

    def ready(self) -> None:
        # processes/ never imports triggers/: a run hears its processes settle through the
        # listener registry of processes/actions/reports.py.
        from processes.actions.reports import on_process_settled
        from triggers.runs import process_settled

        on_process_settled(process_settled)
