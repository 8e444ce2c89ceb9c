from django.apps import AppConfig


class TriggersConfig(AppConfig):
    name = "triggers"
    label = "triggers"
    verbose_name = "Triggers, runs and notifications"

    def ready(self) -> None:
        # processes/ never imports triggers/: a run hears its processes settle through the
        # listener registry of processes/actions/reports.py.
        # A person's runs are written by the lane's commits, through its wake listeners.
        from inbox.services import on_item_posted, on_origin_answered
        from processes.actions.reports import on_process_settled
        from processes.lane.quota import on_quota_turn
        from processes.lane.wakes import on_wake_committed
        from triggers.approvals import item_posted
        from triggers.cron_fire import approval_posted, continuation_settled
        from triggers.human_runs import wake_committed
        from triggers.linker import ORIGIN_PREFIX, approval_answered
        from triggers.runs import process_settled

        on_process_settled(process_settled)
        on_wake_committed(wake_committed)
        on_item_posted(item_posted)
        # A cron job's process_continue: its run ends when its process settles, and a posted
        # APPROVAL item ends it early (stopOnApproval).
        on_process_settled(continuation_settled)
        on_quota_turn(approval_posted)
        # The brain linker's approvals (posted by no process): their answers come back here.
        on_origin_answered(ORIGIN_PREFIX, approval_answered)
