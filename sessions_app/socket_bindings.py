"""Sessions bound to sockets of this server process (for a clean shutdown), and whether the
server is stopping: a socket closed by the shutdown suspends its session for SHUTDOWN, not
DISCONNECT."""

from __future__ import annotations

import threading
from collections import Counter

_lock = threading.Lock()
_bound: Counter[int] = Counter()
_stopping = threading.Event()


def server_stopping() -> None:
    """The server begins to stop (before it closes its sockets: the brain command's shutdown
    trigger)."""
    _stopping.set()


def is_server_stopping() -> bool:
    return _stopping.is_set()


def bind(session_id: int) -> None:
    with _lock:
        _bound[session_id] += 1


def unbind(session_id: int) -> bool:
    """Whether another socket of this process still holds the session (a page reloaded: its
    new socket resumed the session before the old one's disconnect came)."""
    with _lock:
        _bound[session_id] -= 1
        if _bound[session_id] <= 0:
            del _bound[session_id]
            return False
        return True


def bound_sessions() -> list[int]:
    with _lock:
        return list(_bound)
