"""Inbox items and their status history.

An item is a row of its own: it names the process that posted it, but outlives it (the
process's row may go; the item keeps its public id in `origin_public_id`).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from vancetope.tenancy.models import Project
from vancetope.transition_record import TransitionRecord


class InboxKind(models.TextChoices):
    OUTPUT_TEXT = "OUTPUT_TEXT"  # a result to read; nothing to answer, dismissed once read
    APPROVAL = "APPROVAL"  # approve or reject, with an optional comment
    QUESTION = "QUESTION"  # answered with free text, or with one of its options


class InboxStatus(models.TextChoices):
    OPEN = "OPEN"  # waiting for its person
    ANSWERED = "ANSWERED"  # answered; the answer went (or was meant to go) to its process
    DISMISSED = "DISMISSED"  # put away by its person without an answer
    EXPIRED = "EXPIRED"  # its time ran out; answered with its default action if it has one


class InboxItem(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="inbox_items")
    # The owner of the origin process's session: the only user who sees and answers it.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="inbox_items"
    )
    origin_process = models.ForeignKey(
        "processes.ThinkProcess",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="inbox_items",
    )
    # The origin's public id (tp_12), kept when its row is gone.
    origin_public_id = models.CharField(max_length=32)
    kind = models.CharField(max_length=16, choices=InboxKind.choices)
    title = models.CharField(max_length=200)
    body = models.TextField(blank=True, help_text="Markdown")
    # The choices of a QUESTION (empty: free text only).
    options = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=16, choices=InboxStatus.choices, default=InboxStatus.OPEN)
    answer = models.JSONField(null=True, blank=True)
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    answered_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    # The answer expiry gives, e.g. {"decision": "reject"}; null: it expires unanswered.
    default_action = models.JSONField(null=True, blank=True)
    # Whether the answer reached the origin process (null until there is one to deliver),
    # and why not when it did not.
    origin_delivered = models.BooleanField(null=True, blank=True)
    origin_note = models.TextField(blank=True)
    # Posted by the Brain for a root process that asked its parent, which it has not
    # (inbox/asking.py): the answer reaches it as a steer, as a parent passes one on.
    answer_as_steer = models.BooleanField(default=False)
    # The process whose question it is when another posted it for it (arthur or vogon passing
    # a worker's question on, whose answer they pass down): tp_N; "" when the poster asked.
    asked_by = models.CharField(max_length=32, blank=True)
    # The tool call (call_N) an item asks about: the Brain asked whether to run again a call
    # its stop left uncertain; the answer settles that call (processes/actions/uncertain.py)
    # instead of reaching the process's engine. "" for every other item.
    about = models.CharField(max_length=32, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = "inbox item"
        indexes = [
            models.Index(fields=["user", "status"]),
            models.Index(fields=["status", "expires_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.public_id} {self.kind} {self.status}: {self.title}"

    @property
    def public_id(self) -> str:
        return f"inb_{self.pk}"


class InboxTransition(TransitionRecord):
    """One change of an item's status, written by inbox.transitions with the change."""

    item = models.ForeignKey(InboxItem, on_delete=models.CASCADE, related_name="transitions")
    # Blank for the first row: a new item has no status before OPEN.
    from_status = models.CharField(max_length=16, blank=True)
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    detail = models.TextField(blank=True)

    class Meta:
        ordering = ["item", "at", "pk"]

    def __str__(self) -> str:
        return f"{self.item_id}: {self.from_status or '—'} -{self.call}-> {self.to_status}"
