"""Signals other apps listen to without sessions_app importing them."""

from __future__ import annotations

from django.dispatch import Signal

# A person's client registered its tools: sent with `session` (the Session) and `tools` (their
# names). The processes app posts a service event for each that agrajag found DOWN.
tools_registered = Signal()
