"""The abstract model of a transition's record row (vancetope/statemachine.py), apart from the
machine itself so that a status table can be imported before Django's models are ready."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class TransitionRecord(models.Model):
    """The record row of a change of status: the call, from where to where, and when. Each
    app's record model adds the row it belongs to (and what else it records)."""

    call = models.CharField(max_length=16)
    from_status = models.CharField(max_length=16)
    to_status = models.CharField(max_length=16)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.from_status or '—'} -{self.call}-> {self.to_status}"
