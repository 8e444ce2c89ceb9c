"""The session object sent to clients."""

from __future__ import annotations

from typing import Any

from protocol.vocabulary import iso
from sessions_app.models import Session


def session_data(session: Session) -> dict[str, Any]:
    return {
        "id": session.public_id,
        "projectId": session.project.public_id,
        "clientType": session.client_type,
        "isHuman": session.is_human,
        "system": session.system,
        "status": session.status,
        "suspendCause": session.suspend_cause or None,
        "onDisconnect": session.on_disconnect,
        "onSuspend": session.on_suspend,
        "onIdle": session.on_idle,
        "idleTimeout": session.idle_timeout,
        "fingerprint": {
            "machineId": session.machine_id,
            "workingDir": session.working_dir,
            "userHome": session.user_home or None,
            "osUser": session.os_user or None,
        },
        "chatProcessId": f"tp_{session.chat_process_id}" if session.chat_process_id else None,
        "tools": [tool["name"] for tool in session.client_tools],
        "lastSeq": session.last_seq,
        "createdAt": iso(session.created_at),
        "lastActivityAt": iso(session.last_activity_at),
        "closedAt": iso(session.closed_at),
    }
