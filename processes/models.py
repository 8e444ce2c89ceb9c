"""Think processes, their pending queue, conversation and status history.

Everything a process needs to continue lives in these rows, so a process survives a restart of
every server process.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from processes.states import CloseReason, Status
from sessions_app.models import Session
from vancetope.transition_record import TransitionRecord


class ThinkProcess(models.Model):
    # No index of its own: the (session, status) index leads with it (a page less to write
    # per status change).
    session = models.ForeignKey(
        Session, on_delete=models.CASCADE, related_name="processes", db_index=False
    )
    parent = models.ForeignKey(
        "self", on_delete=models.CASCADE, null=True, blank=True, related_name="children"
    )
    # The process whose budget this one spends:
    # null for a process that is its own budget root (a top-level process, or a child of a
    # session's chat process, whose every task gets a budget of its own).
    root = models.ForeignKey(
        "self", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    # 0 for a top-level process, its parent's + 1 for a child.
    depth = models.PositiveSmallIntegerField(default=0)
    # On a budget root: how many processes its tree has spawned (the maxChildren budget).
    descendants = models.PositiveIntegerField(default=0)
    # Set by the parent's commit for a child it spawned: the child is started in its own lane
    # (and started again by recovery if the Brain stopped before it was).
    autostart = models.BooleanField(default=False)
    # True from a turn's spawn until that turn commits (which sets autostart): a child whose
    # spawning turn never committed (a crash, a failed attempt) is removed, never started
    # (processes/recovery.py `remove_abandoned_spawns`), so a retried turn makes no second one.
    uncommitted_spawn = models.BooleanField(default=False)
    # The person a system run works for (a workflow run over REST, cron or a webhook runs in a
    # `_system` session): they read the run's processes, its children's too, but do not
    # change them (processes/queries.py). Null for a person's own processes.
    run_owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    think_engine = models.CharField(max_length=50)
    engine_version = models.CharField(max_length=20)
    goal = models.TextField(blank=True)
    recipe_name = models.CharField(max_length=100)
    # The recipe as it was at spawn (prompt prefix, params, tool pool changes, category, roles).
    recipe_snapshot = models.JSONField(default=dict)
    engine_params = models.JSONField(default=dict, blank=True)
    # Owned by the engine (task tree, strategy state, …); cleared by reset.
    engine_state = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.INIT)
    close_reason = models.CharField(max_length=16, choices=CloseReason.choices, blank=True)
    context_drift = models.BooleanField(default=False)
    # A pause/suspend/stop waiting for the lane: the running turn stops at its next boundary.
    interrupt = models.CharField(max_length=16, blank=True)
    interrupt_at = models.DateTimeField(null=True, blank=True)
    # The seq the next pending message gets (1, 2, 3, … per process).
    next_pending_seq = models.PositiveBigIntegerField(default=1)
    # How many pending messages turns have consumed, counted by the commit that consumes one:
    # `waiting` is read from this row without counting the messages.
    consumed_count = models.PositiveBigIntegerField(default=0)
    # How many conversation messages exist: the index of the next one.
    conversation_length = models.PositiveIntegerField(default=0)
    # Grows with every reset (which deletes the conversation), so a cached copy of an earlier
    # conversation of the same length is never mistaken for the current one.
    conversation_epoch = models.PositiveIntegerField(default=0)
    # Grows with every compaction of the conversation and every undo of one
    # (processes/lane/compaction.py): the calls keep the compaction in use and the index of its
    # folded turns by (epoch, folds), so a kept one is never stale.
    folds = models.PositiveIntegerField(default=0)
    # The lane lease: who drives this process, until when, and a fence that grows with every
    # acquisition so a worker that lost its lease cannot write any more.
    lease_owner = models.CharField(max_length=100, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    lease_fence = models.PositiveBigIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    # LLM calls its turns and lifecycle calls made (a run log sums them over a tree).
    llm_calls = models.PositiveIntegerField(default=0)
    # Some of its tokens are an estimate: a server that reported no usage (vancetope/llm/).
    usage_estimated = models.BooleanField(default=False)
    last_error = models.TextField(blank=True)
    # What the last LLM call of a committed turn sent, part by part with tokens, within its
    # model's window (vancetope/llm/assembly.py `Assembled.report`); null until a call of a
    # model whose window is known.
    last_call = models.JSONField(null=True, blank=True)
    # A bounded continuation (a cron job's process_continue, processes/lane/quota.py): empty
    # for every other process, so their turns check nothing.
    run_quota = models.JSONField(default=dict, blank=True)
    # The external key a BLOCKED process waits for (`jira:ABC-1`, set by its await_external
    # tool call); a webhook's unblock_tasks steers the processes of its key and clears it.
    blocked_by_external = models.CharField(max_length=200, blank=True, db_index=True)
    # The W3C traceparent of the span this process was created under (its parent's spawn, or
    # a span of its own), written at its creation when tracing is on: its turns are children
    # of that span, so a process tree is one trace on every worker (vancetope/observability/
    # tracing.py). Empty when tracing was off, and for a session's chat process.
    trace_parent = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "think process"
        verbose_name_plural = "think processes"
        indexes = [
            models.Index(fields=["session", "status"]),
            models.Index(fields=["status", "lease_expires_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.public_id} ({self.think_engine}, {self.status})"

    @property
    def public_id(self) -> str:
        return f"tp_{self.pk}"

    @property
    def waiting(self) -> int:
        """How many of its messages wait for a turn."""
        return self.next_pending_seq - 1 - self.consumed_count

    @property
    def category(self) -> str:
        return str(self.recipe_snapshot.get("category", "user"))


class PendingKind(models.TextChoices):
    USER = "USER"  # a chat message from the person at the client
    STEER = "STEER"  # a steer sent with process-steer
    CONTROL = "CONTROL"  # a control message from the system
    PARENT_REPORT = "PARENT_REPORT"  # a child's report to its parent
    TOOL_RESULT = "TOOL_RESULT"  # a tool's answer delivered later
    INBOX_ANSWER = "INBOX_ANSWER"  # a person's answer to an inbox item
    UNBLOCK = "UNBLOCK"  # an external event (a webhook) the process waited for


class PendingMessage(models.Model):
    """Append-only; consumed exactly once, by the turn that stores its outcome."""

    # No index of its own: the unique (process, seq) index leads with it (a page less to write
    # per message).
    process = models.ForeignKey(
        ThinkProcess, on_delete=models.CASCADE, related_name="pending", db_index=False
    )
    seq = models.PositiveBigIntegerField()
    kind = models.CharField(max_length=16, choices=PendingKind.choices)
    payload = models.JSONField(default=dict)
    consumed = models.BooleanField(default=False)
    consumed_at = models.DateTimeField(null=True, blank=True)
    # The lease fence of the turn that consumed it: proves it was consumed once, by whom.
    consumed_fence = models.PositiveBigIntegerField(null=True, blank=True)
    # A USER message's turn, as it was before the turn (engineState, engineParams,
    # conversationLength, at), written by the commit that consumed it; an undo puts it back.
    # Only the newest VANCETOPE_UNDO_KEEP_TURNS of a process are kept (processes/actions/undo.py).
    undo_snapshot = models.JSONField(null=True, blank=True)
    # Set when its turn was undone, or when it was unsent before any turn read it.
    undone_at = models.DateTimeField(null=True, blank=True)
    undone_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["process", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["process", "seq"], name="uniq_pending_seq_per_process")
        ]
        indexes = [models.Index(fields=["process", "consumed", "seq"])]

    def __str__(self) -> str:
        return f"{self.process_id}#{self.seq} {self.kind}"

    @property
    def text(self) -> str:
        return str(self.payload.get("text", ""))


class ConversationMessage(models.Model):
    """One message of a process's conversation; turns append, nothing rewrites history (an
    undo only marks messages undone)."""

    # No index of its own: the unique (process, index) index leads with it (a page less to write
    # per message).
    process = models.ForeignKey(
        ThinkProcess, on_delete=models.CASCADE, related_name="conversation", db_index=False
    )
    index = models.PositiveIntegerField()
    role = models.CharField(max_length=16)
    content = models.TextField(blank=True)
    tool_calls = models.JSONField(default=list, blank=True)
    tool_call_id = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Taken back by an undo: kept, but no longer sent to the LLM or shown to clients.
    undone_at = models.DateTimeField(null=True, blank=True)
    undone_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )

    class Meta:
        ordering = ["process", "index"]
        constraints = [
            models.UniqueConstraint(fields=["process", "index"], name="uniq_message_index")
        ]

    def __str__(self) -> str:
        return f"{self.process_id}[{self.index}] {self.role}"


class Compaction(models.Model):
    """A fold of a conversation's oldest turns into a summary (processes/lane/compaction.py):
    the calls of later turns send the summary instead of those messages. Each compaction
    covers the conversation from its start to `last_index` (its summary folds the previous
    one's in), so the newest one not undone is the one in use. No message is deleted or
    changed: an undo of a folded turn, or of the compaction itself, sets `undone_at`, and the
    calls send those messages (or a new compaction's summary) again."""

    # No index of its own: compaction_by_process leads with it.
    process = models.ForeignKey(
        ThinkProcess, on_delete=models.CASCADE, related_name="compactions", db_index=False
    )
    # The conversation indexes this compaction folded anew (the earlier ones are in the summary
    # of the compaction it continues); it covers everything up to `last_index`.
    first_index = models.PositiveIntegerField()
    last_index = models.PositiveIntegerField()
    # How many messages not undone it covers in all (from the start): the calls leave out that
    # many messages of the history and send the summary instead.
    messages = models.PositiveIntegerField()
    # How many turns (a person's or a parent's message and what answered it) it folded anew.
    turns = models.PositiveIntegerField()
    summary = models.TextField()
    # `llm`: the model wrote the summary (step `compact`); `fallback`: the model could not, and
    # the summary is the goal and the folded turns' first lines.
    method = models.CharField(max_length=16)
    model = models.CharField(max_length=200, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    # The summary's own tokens, as the calls count them.
    summary_tokens = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    undone_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["process", "last_index"]
        indexes = [models.Index(fields=["process", "last_index"], name="compaction_by_process")]

    def __str__(self) -> str:
        return f"{self.public_id} of tp_{self.process_id}: [{self.first_index}, {self.last_index}]"

    @property
    def public_id(self) -> str:
        return f"cmp_{self.pk}"


class ProcessTransition(TransitionRecord):
    """A record row for every change of status: who asked for what, from where to where."""

    process = models.ForeignKey(ThinkProcess, on_delete=models.CASCADE, related_name="transitions")
    close_reason = models.CharField(max_length=16, blank=True)
    detail = models.TextField(blank=True)

    class Meta:
        ordering = ["process", "at", "pk"]

    def __str__(self) -> str:
        return f"{self.process_id}: {self.from_status} -{self.call}-> {self.to_status}"
