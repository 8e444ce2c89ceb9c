"""Approvals asked by a run's tasks: when a process of a run posts an APPROVAL inbox item, the
run's owner gets a notification naming the item (stored, and a `notification` event to their
open sessions), and the run counts it in notificationsSent.

A process belongs to a system run when it or its root carries the run's id in its params
(triggers.runs.system.RUN_PARAM); a process of a person's session belongs to its root's run
(triggers/runs/human.py). A receiver of the inbox's item_posted signal (triggers/receivers.py).
"""

from __future__ import annotations

from django.db.models import F

from inbox.models import InboxItem, InboxKind
from processes.models import ThinkProcess
from processes.queries import session_facts
from sessions_app.models import HUMAN_CLIENT_TYPES
from triggers.models import RunLog
from triggers.notifications import notify
from triggers.runs import human as human_runs
from vancetope.errors import NotFound
from vancetope.ids import parse_public_id

RUN_PARAM = human_runs.RUN_PARAM


def item_posted(item: InboxItem) -> RunLog | None:
    """The item_posted receiver's work; the run that was told, if any."""
    process = item.origin_process
    if item.kind != InboxKind.APPROVAL or process is None:
        return None
    run = system_run_of(process)
    unstored_root = None
    if run is not None:
        RunLog.objects.filter(pk=run.pk).update(notifications_sent=F("notifications_sent") + 1)
        run.notifications_sent += 1
    else:
        facts = session_facts(process.session_id)
        if facts is None or not facts.is_human or facts.client_type not in HUMAN_CLIENT_TYPES:
            return None
        run, unstored_root = human_runs.count_notice(process)
    owner = run.owner if run is not None else item.user
    project = run.project if run is not None else item.project
    text = (
        f"{process.public_id} asks for your approval: {item.title} "
        f"(answer {item.public_id} in the inbox)"
    )
    if run is not None:
        text = f"{text}, in {run.public_id}"
    sent = notify(owner, project, text, "warning", run=run, process_id=process.public_id)
    if unstored_root is not None:
        human_runs.keep_unstored(unstored_root, sent.pk)
    return run


def system_run_of(process: ThinkProcess) -> RunLog | None:
    """The system run the process (or its root) carries the id of."""
    params = process.engine_params if isinstance(process.engine_params, dict) else {}
    run_id = params.get(RUN_PARAM)
    if run_id is None and process.root_id is not None:
        root = ThinkProcess.objects.filter(pk=process.root_id).values_list("engine_params").first()
        run_id = root[0].get(RUN_PARAM) if root and isinstance(root[0], dict) else None
    if not isinstance(run_id, str):
        return None
    try:
        pk = parse_public_id("run", run_id, "run")
    except NotFound:
        return None
    return RunLog.objects.select_related("owner", "project").filter(pk=pk).first()
