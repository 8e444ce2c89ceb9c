"""What the processes app tells other apps, as Django signals: processes/ imports none of the
apps that listen (triggers/, spaces/, inbox/, the MCP face); each connects its receivers in its
AppConfig.ready(), and receivers run in the order they were connected (INSTALLED_APPS order).

Each is sent with `sender=ThinkProcess` and keyword arguments only. Several are on the turn
path, whose statements are counted (tests/infra/test_turn_queries.py): a receiver must cost no
query for a process that is none of its own.
"""

from __future__ import annotations

from django.dispatch import Signal

# A lifecycle call or a lane's run left a process in a status of rest (IDLE, BLOCKED, CLOSED,
# …), before its parent hears: `process`, `status`, `reason` (the close reason or ""). Sent
# robustly: a receiver's failure is its own, logged, and the process and its parent go on
# (triggers/ ends its runs this way, spaces/ unlocks a node's control turn).
process_settled = Signal(use_caching=True)

# Inside each commit of a wake (processes/lane/wake_listeners.py): `wake`, `status` (the status the
# commit leaves), `reason`. A receiver writes in that same transaction and returns the events
# to store with the commit's own (a list, maybe empty); its failure fails the commit
# (triggers/ writes the run logs of a person's turns this way).
wake_committed = Signal(use_caching=True)

# A person's chat or steer to `process`, inside the transaction that would queue it, with the
# process row as it is locked there: a receiver refuses by raising a Conflict saying why, and
# nothing is queued (spaces/: a node that is read-only for a while).
person_message = Signal(use_caching=True)

# Inside an undo's transaction: `process`, `since` (when the undone turn began), `by` (who
# undoes). A receiver takes back what the turn did in its own tables and returns a
# processes.actions.undo.TakenBack (the inbox dismisses the items the turn posted).
turn_undone = Signal()

# After each counted turn of a process with an active continuation quota
# (processes/lane/quota.py): `process`, `quota` (as it is after the turn). A receiver returns a
# reason to stop the continuation now, or None; the first reason, in connection order, wins.
# Sent robustly: a failing check is logged and stops nothing (triggers/: stopOnApproval).
quota_turn = Signal(use_caching=True)

# A turn's engine context is built (processes/lane/context_builder.py): sent with `process` (the
# ThinkProcess), `allowed_tools` (the engine's default tool names) and `ctx` (the
# ThinkEngineContext). An app that owns a part of the context sets it here: the inbox
# `ctx.inbox`, spaces `ctx.space`. Sent with `send`: a part that fails to build fails the turn.
context_built = Signal()

# A retried turn met a MUTATING tool call that the Brain's stop left without a result, and that
# may not run again blindly: the process went BLOCKED, its message pending, until its person
# decides. Sent after that commit with `process` and `call` (the ToolCall row, UNCERTAIN). Sent
# robustly: a receiver's failure is logged (the inbox posts the APPROVAL that asks; its answer
# settles the call, processes/actions/uncertain.py).
call_uncertain = Signal()
