"""What the memory kernel asks the apps, as a Django signal: the kernel knows sessions only by
id and imports no app, so the sessions app answers (sessions_app/memory_sessions.py, connected
in SessionsConfig.ready())."""

from __future__ import annotations

from django.dispatch import Signal

# Which session `session_pk` is, if `user` owns it: sent with `sender=SessionRef`, `user` and
# `session_pk`; the sessions app's receiver returns a SessionRef, or None when the user owns no
# such session. The first SessionRef answered is the session.
session_wanted = Signal()
