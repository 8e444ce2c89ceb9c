from django.apps import AppConfig


class TriggersConfig(AppConfig):
    name = "triggers"
    label = "triggers"
    verbose_name = "Triggers, runs and notifications"

    def ready(self) -> None:
        # processes/ never imports triggers/: a run hears its processes settle through the
        # listener registry of processes/actions/reports.py.
        from processes.actions.reports import on_process_settled
        from processes.lane.quota import on_quota_turn
        from triggers.cron_fire import approval_posted, continuation_settled
        from triggers.runs import process_settled

        on_process_settled(process_settled)
        # A cron job's process_continue: its run ends when its process settles, and a posted
        # APPROVAL item ends it early (stopOnApproval).
        on_process_settled(continuation_settled)
        on_quota_turn(approval_posted)
