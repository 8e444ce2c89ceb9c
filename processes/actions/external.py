"""External events: a process that called await_external waits BLOCKED on a key
(`blocked_by_external`); `unblock_external` steers every such process of a project, and no
other, with the event (an UNBLOCK pending message, which its LLM reads as
`[unblocked by KEY]` and the event), and clears the key."""

from __future__ import annotations

import json
from typing import Any

from django.db import transaction

from processes.actions.pending import deliver
from processes.models import PendingKind, ThinkProcess
from processes.states import Status
from sessions_app.models import Session


def unblock_external(project_id: int, key: str, event: Any) -> list[str]:
    """The public ids of the processes unblocked. Each is claimed by compare-and-swap on its
    key and status, in the transaction that appends its message, so two deliveries of the
    same key never unblock one process twice."""
    if not key:
        return []
    # A webhook delivery runs this each time, mostly finding none; the project is checked on
    # the few found.
    found = list(
        ThinkProcess.objects.filter(blocked_by_external=key, status=Status.BLOCKED).values_list(
            "id", "session_id"
        )
    )
    if not found:
        return []
    sessions = set(
        Session.objects.filter(
            pk__in={session for _, session in found}, project_id=project_id
        ).values_list("pk", flat=True)
    )
    text = json.dumps(event, ensure_ascii=False)
    unblocked = []
    for process_id in sorted(pk for pk, session in found if session in sessions):
        with transaction.atomic():
            claimed = ThinkProcess.objects.filter(
                pk=process_id, blocked_by_external=key, status=Status.BLOCKED
            ).update(blocked_by_external="")
            if claimed != 1:
                continue
            if deliver(process_id, PendingKind.UNBLOCK, {"text": text, "key": key}) is None:
                continue
        unblocked.append(f"tp_{process_id}")
    return unblocked
