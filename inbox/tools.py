"""The `inbox_post` server tool (docs/protocol.md, "Tools of the orchestration engines").

In no engine's default pool yet: a recipe offers it with `allowedToolsAdd: [inbox_post]`, which
also gives its processes `ctx.inbox` (inbox/capability.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from inbox.capability import INBOX_TOOL
from inbox.models import InboxKind
from inbox.services import post_item
from processes.models import ThinkProcess
from vancetope.errors import BadRequest
from vancetope.tools.checker import Classification
from vancetope.tools.errors import ToolFailure
from vancetope.tools.models import Safety
from vancetope.tools.registry import server_tool

if TYPE_CHECKING:
    from vancetope.tools.dispatch import ToolBox


@server_tool(
    INBOX_TOOL,
    "Post an item to the inbox of this session's user: OUTPUT_TEXT (a result for them to "
    "read), APPROVAL (they approve or reject) or QUESTION (they answer in their own words, or "
    "pick one of `options`). Returns its itemId at once; the answer arrives later as a message "
    "that begins with [inbox answer inb_N].",
    {
        "type": "object",
        "properties": {
            "kind": {"enum": list(InboxKind.values)},
            "title": {"type": "string", "minLength": 1, "maxLength": 200},
            "body": {"type": "string", "description": "Markdown"},
            "options": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "description": "the choices of a QUESTION",
            },
        },
        "required": ["kind", "title", "body"],
        "additionalProperties": False,
    },
    safety=Safety.MUTATING,
)
def inbox_post(toolbox: ToolBox, arguments: dict[str, Any]) -> Any:
    process = ThinkProcess.objects.select_related("session").get(pk=toolbox.caller.process_id)
    try:
        item = post_item(
            process,
            kind=str(arguments["kind"]),
            title=str(arguments["title"]),
            body=str(arguments["body"]),
            options=list(arguments.get("options") or []),
        )
    except BadRequest as exc:
        raise ToolFailure(exc.message, classification=Classification.BAD_ARGUMENTS) from exc
    return {"itemId": item.public_id}
