"""`ctx.inbox` for a process: posting items (engines/capabilities.py `Inbox`).

User I/O belongs to top-level recipes: a process has `ctx.inbox` only when
its tool pool holds `inbox_post` (arthur's does; a recipe adds it with `allowedToolsAdd`).
The lane asks `inbox_for` while it builds the context; the check reads only the engine's
defaults and the recipe snapshot, so a process without the tool pays nothing for it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from inbox.services import post_item
from processes.models import ThinkProcess
from vancetope.tools.catalogue import matches

INBOX_TOOL = "inbox_post"


class InboxAccess:
    """Implements engines.capabilities.Inbox for one process."""

    def __init__(self, process: ThinkProcess) -> None:
        self._process = process

    def post(
        self,
        *,
        kind: str,
        title: str,
        body: str,
        options: list[str] | None = None,
        asked_by: str = "",
    ) -> str:
        """The new item's public id (inb_N)."""
        return post_item(self._process, kind, title, body, options, asked_by=asked_by).public_id


def may_post(process: ThinkProcess, engine_default: Iterable[str]) -> bool:
    """Whether `inbox_post` is in the process's pool: the engine's default or the recipe's
    additions name it (a pattern may), and the recipe's removals do not. It is a server tool
    that needs no role and no client, so nothing else can take it out."""
    snapshot = process.recipe_snapshot
    wanted = [*engine_default, *snapshot.get("allowedToolsAdd", [])]
    return matches(INBOX_TOOL, wanted) and not matches(
        INBOX_TOOL, snapshot.get("allowedToolsRemove", [])
    )


def inbox_for(process: ThinkProcess, engine_default: Iterable[str]) -> InboxAccess | None:
    """`ctx.inbox` for the process, or None (the context keeps its NotAvailable part)."""
    return InboxAccess(process) if may_post(process, engine_default) else None


def set_context_inbox(
    sender: Any, process: ThinkProcess, allowed_tools: Iterable[str], ctx: Any, **kwargs: Any
) -> None:
    """A turn's context is built (processes.signals.context_built): its `ctx.inbox`."""
    if inbox := inbox_for(process, allowed_tools):
        ctx.inbox = inbox
