"""Thinking spaces: a rooted tree of isolated conversations in one project.

Each node is its own Session with its own chat process; parent and child share no raw
message. Context crosses only as three Handoffs: the inherited one (immutable, written once by
the parent's agent), the checkpoint (replaceable, for siblings) and the returned one (terminal,
for the parent). The space is stored once; every mutation moves `revision` by exactly one in
the transaction that writes it (spaces/transitions.py), and leaves a SpaceChange row.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from vancetope.tenancy.models import Project

# The version of the space's stored shape. A space of another version is refused, never
# guessed at: a future change of shape adds an explicit upgrader before moving this.
SPACE_VERSION = 1
# The stable order of a space's nodes in every answer.
NODE_ORDER = ("depth", "sort_order", "pk")


class NodeState(models.TextChoices):
    DORMANT = "dormant"  # created, its conversation not begun (no user message, no agent turn)
    FORK_PENDING = "forkHandoffPending"  # a human split: waits for its parent agent's Handoff
    ACTIVE = "active"  # its conversation has begun
    RETURNING = "returning"  # its agent is writing the returned Handoff (a control turn)
    RETURNED = "returned"  # terminal: its returned Handoff is published, the node is sealed


class ThinkingSpace(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="thinking_spaces")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="thinking_spaces"
    )
    version = models.PositiveSmallIntegerField(default=SPACE_VERSION)
    # Moves by one with every accepted mutation; a mutation read at another revision is refused.
    revision = models.PositiveIntegerField(default=1)
    root_node = models.ForeignKey(
        "spaces.ThinkingNode", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = "thinking space"

    def __str__(self) -> str:
        return f"{self.public_id} r{self.revision}"

    @property
    def public_id(self) -> str:
        return f"spc_{self.pk}"


class ThinkingNode(models.Model):
    space = models.ForeignKey(ThinkingSpace, on_delete=models.CASCADE, related_name="nodes")
    parent = models.ForeignKey(
        "self", on_delete=models.CASCADE, null=True, blank=True, related_name="children"
    )
    depth = models.PositiveSmallIntegerField(default=0)
    sort_order = models.PositiveIntegerField(default=0)
    # Its own conversation: one session (and that session's chat process) per node.
    session = models.OneToOneField(
        "brain_sessions.Session", on_delete=models.CASCADE, related_name="thinking_node"
    )
    chat_process = models.ForeignKey(
        "processes.ThinkProcess", on_delete=models.CASCADE, related_name="+"
    )
    title = models.CharField(max_length=200)
    state = models.CharField(max_length=24, choices=NodeState.choices, default=NodeState.DORMANT)
    # Set while the node's agent refreshes its checkpoint; cleared when it succeeds or fails.
    checkpoint_refreshing_at = models.DateTimeField(null=True, blank=True)
    inherited_handoff = models.TextField(blank=True)
    checkpoint_handoff = models.TextField(blank=True)
    returned_handoff = models.TextField(blank=True)
    # A successful return's notice waits here while the parent's lane runs; it is appended
    # to the parent's conversation once the parent rests (and cleared, so it is appended once).
    notice_pending = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["space", "depth", "sort_order", "pk"]
        verbose_name = "thinking node"
        indexes = [models.Index(fields=["chat_process"])]

    def __str__(self) -> str:
        return f"{self.public_id} {self.state}: {self.title}"

    @property
    def public_id(self) -> str:
        return f"node_{self.pk}"


class NodeTransition(models.Model):
    """One change of a node's lifecycle state (or of its checkpoint lock), written by
    spaces.transitions with the change."""

    node = models.ForeignKey(ThinkingNode, on_delete=models.CASCADE, related_name="transitions")
    call = models.CharField(max_length=24)
    from_state = models.CharField(max_length=24, blank=True)
    to_state = models.CharField(max_length=24)
    revision = models.PositiveIntegerField()
    detail = models.TextField(blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["node", "at", "pk"]

    def __str__(self) -> str:
        return f"{self.node_id}: {self.from_state} -{self.call}-> {self.to_state}"


class SpaceChange(models.Model):
    """One accepted mutation of a space: the revision it produced (revisions of one space are
    unique, so a gap or a double would show here), what it was and who asked."""

    space = models.ForeignKey(ThinkingSpace, on_delete=models.CASCADE, related_name="changes")
    revision = models.PositiveIntegerField()
    kind = models.CharField(max_length=32)
    node = models.ForeignKey(
        ThinkingNode, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # `agent` (a thinking_* tool), `human` (a space-* frame), `system` (a turn's end).
    by = models.CharField(max_length=16)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["space", "revision"]
        constraints = [
            models.UniqueConstraint(fields=["space", "revision"], name="uniq_space_revision")
        ]

    def __str__(self) -> str:
        return f"{self.space_id} r{self.revision} {self.kind}"
