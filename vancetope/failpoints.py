"""Failpoints: named places on the turn's path where a crash test kills the Brain with SIGKILL,
to prove what a crash at exactly that place leaves behind (the technique of etcd's gofail and
TiKV's fail-rs). The VANCETOPE_FAILPOINTS environment variable arms them in one OS process:
`tool-answered` fires the first time it is reached, `llm-streaming@2` the second. Unset, as it
is everywhere but in those tests, reaching one is a lookup in an empty dict.

The places (tests/processes/test_journal_crash.py kills at each):
- `tool-starting`: a tool call is about to be journaled and run;
- `tool-ran`: the tool answered, its result not yet journaled;
- `tool-answered`: its result is journaled, the turn's next LLM call not yet made;
- `llm-streaming`: an LLM call's answer has begun to arrive;
- `turn-committing`: the turn's work is done, its commit not yet begun.
"""

from __future__ import annotations

import os
import signal
import threading


def _armed(value: str) -> dict[str, int]:
    armed = {}
    for item in filter(None, (part.strip() for part in value.split(","))):
        name, _, nth = item.partition("@")
        armed[name] = int(nth or 1)
    return armed


_ARMED = _armed(os.environ.get("VANCETOPE_FAILPOINTS", ""))
_reached: dict[str, int] = {}
_lock = threading.Lock()


def reach(name: str) -> None:
    """Kill this OS process here if `name` is armed and this is its time."""
    if name not in _ARMED:
        return
    with _lock:
        _reached[name] = _reached.get(name, 0) + 1
        if _reached[name] == _ARMED[name]:
            os.kill(os.getpid(), signal.SIGKILL)
