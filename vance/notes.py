"""What `vance chat` says about its session besides the events: the processes a resume from
another working directory left SUSPENDED, and a message that waits to be answered."""

from __future__ import annotations

from typing import Any

from rich.panel import Panel
from rich.text import Text


def drift_panel(drifted: list[dict[str, Any]], original_dir: str, working_dir: str) -> Panel:
    """The processes a resume from another working directory left SUSPENDED, and what to do."""
    lines = [
        f"This session was started in {original_dir}; you are in {working_dir}. Its processes' "
        "tool results may point at other files now, so they stay SUSPENDED until you decide "
        "for each:",
    ]
    for process in drifted:
        pid = process["id"]
        lines.append(
            f"  {pid} ({process.get('thinkEngine')}: {process.get('goal') or 'chat'}) — "
            f"/resume {pid} (at your own risk), /stop {pid}, or /reset {pid}"
        )
    lines.append("Outside the chat: vance resume|stop|reset tp_N.")
    return Panel(
        Text("\n".join(lines)), title="context drift", title_align="left", border_style="yellow"
    )


def queued_note(accepted: dict[str, Any], status: str | None) -> Text | None:
    """What a chat-accepted reply means when the message is not answered now: it waits for
    /resume (the chat process is PAUSED), or behind others."""
    process_id = str(accepted.get("processId"))
    pending = int(accepted.get("pending") or 0)
    if status == "PAUSED":
        return Text(
            f"queued: {process_id} is PAUSED ({pending} pending); /resume to have it answered",
            style="yellow",
        )
    if pending > 1:
        return Text(f"queued behind {pending - 1} message(s) of {process_id}", style="dim")
    return None
