"""The sessions page of the web UI: the person's chats (every client's), the latest first,
each named by its first words, with a way back into it: a web chat resumes in interactive
mode, a terminal's with `vance chat --session`."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from processes.chats import chats
from sessions_app.models import ClientType, SessionStatus

SESSION_LIMIT = 100
TITLE_CHARS = 90


@login_required
def sessions_page(request: HttpRequest) -> HttpResponse:
    rows = []
    for session in chats(request.user)[:SESSION_LIMIT]:
        # The annotations of processes.chats.chats.
        first_words: str | None = getattr(session, "first_words", None)
        length: int | None = getattr(session, "messages", None)
        words = " ".join((first_words or "").split())
        rows.append(
            {
                "id": session.public_id,
                "title": words[:TITLE_CHARS] + ("…" if len(words) > TITLE_CHARS else ""),
                "clientType": session.client_type,
                "status": session.status,
                "project": session.project.public_id,
                "messages": length or 0,
                "chatProcessId": f"tp_{session.chat_process_id}" if session.chat_process_id else "",
                "lastActivityAt": session.last_activity_at.isoformat(),
                "resumable": session.status != SessionStatus.CLOSED,
                "web": session.client_type == ClientType.WEB,
            }
        )
    return render(request, "webui/sessions.html", {"sessions": rows, "mode": "sessions"})
