"""The /commands inside `vance chat`: each sends one request over the chat's socket."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text

from vance.exits import EXIT_OK
from vance.inbox import answer_from_text, answered_text, inbox_panel, inbox_table
from vance.render import process_table
from vance.spaces import USAGE as SPACE_USAGE
from vance.spaces import space_command
from vance.tasktree import node_detail, task_tree

if TYPE_CHECKING:
    from vance.chat import ChatClient

INBOX_STATUSES = ("OPEN", "ANSWERED", "DISMISSED", "EXPIRED")

HELP = (
    """\
/processes [STATUS]    the processes of this session
/processes service     the service processes of this session (left out above)
/tree [tp_N] [nX]      a process's task tree now (default: the last one that
                       changed); with a node id, that node whole
/steer tp_N TEXT       send a steering message to a process
/start [tp_N]          start a process left INIT (default: the chat process)
/undo [tp_N]           take back the last turn (default: the chat's); your
                       message comes back
/unsend [SEQ]          withdraw a message not answered yet (default: the last)
/pause [tp_N]          pause a process (default: the chat process)
/resume [tp_N]         resume a paused, suspended or drifted process
/stop [tp_N]           stop a process for good
/reset [tp_N]          reset a process (e.g. after context drift)
/inbox [STATUS|all]    your inbox items (default OPEN; ANSWERED, DISMISSED,
                       EXPIRED, or all of them)
/answer inb_N TEXT     answer: approve|reject [comment], an option, any text
/dismiss inb_N         put an item away unanswered
"""
    + SPACE_USAGE
    + """
/session               which session this is
/close                 close the session (its processes stop) and leave
/quit                  leave; the session stays resumable from this directory"""
)


async def run_slash_command(chat: ChatClient, line: str) -> int | None:
    """Run one /command typed into the chat; an exit code when the chat should end. A
    refusal of the Brain is shown as the command's (`/resume: …`), not the frame's."""
    name, _, rest = line[1:].partition(" ")
    rest = rest.strip()
    chat.printer.command = f"/{name}" + (f" {rest.split()[0]}" if name == "space" and rest else "")
    try:
        return await _run(chat, name, rest)
    finally:
        chat.printer.command = None


async def _run(chat: ChatClient, name: str, rest: str) -> int | None:
    chat_process = chat.printer.chat_process_id
    if name in {"quit", "exit", "q"}:
        return EXIT_OK
    if name in {"undo", "unsend"}:
        text = ""
        try:
            text = await (
                undo(chat, rest or chat_process or "") if name == "undo" else unsend(chat, rest)
            )
        finally:
            # The reader waits for this answer before it opens the next input line.
            chat.router.put_back(text)
        return None
    if name == "help":
        chat.printer.line(Text(HELP))
    elif name == "session":
        chat.printer.line(
            Text(
                f"session {chat.session_id}, chat process {chat_process}, "
                f"working directory {chat.fingerprint.working_dir}, last event {chat.last_seq}"
            )
        )
    elif name == "close":
        reply = await chat.request("session-close", {})
        show_reply(chat, reply, f"session {chat.session_id} closed")
        chat.memory.forget()
        chat.session_id = None
        return EXIT_OK
    elif name == "processes":
        # `/processes [service] [STATUS]`: service lists the session's service processes.
        words = rest.split()
        service = "service" in words
        data: dict[str, Any] = {"category": "service"} if service else {}
        status = [word for word in words if word != "service"]
        if status:
            data["status"] = status[0].upper()
        reply = await chat.request("process-list", data)
        if reply["type"] == "error":
            chat.printer.error(reply["data"])
        else:
            title = "This session's service processes" if service else "This session"
            chat.printer.line(process_table(reply["data"]["processes"], title, sessions=False))
    elif name == "tree":
        words = rest.split()
        process_id = next((w for w in words if w.startswith("tp_")), None)
        node_id = next((w for w in words if not w.startswith("tp_")), None)
        await show_tree(chat, process_id or chat.printer.trees.last_process, node_id)
    elif name == "steer":
        process_id, _, text = rest.partition(" ")
        if not process_id or not text.strip():
            chat.printer.line(Text("usage: /steer tp_N TEXT", style="yellow"))
            return None
        reply = await chat.request(
            "process-steer", {"processId": process_id, "message": text.strip()}
        )
        show_reply(chat, reply, f"steered {process_id}")
    elif name in {"start", "pause", "resume", "stop", "reset"}:
        target = rest or chat_process or ""
        reply = await chat.request(f"process-{name}", {"processId": target})
        if reply["type"] != "error":
            process = reply["data"]["process"]
            chat.printer.status(process["id"], process["status"], process.get("closeReason"))
        else:
            chat.printer.error(reply["data"])
    elif name == "inbox" and rest.lower() == "all":
        await show_whole_inbox(chat)
    elif name == "inbox":
        reply = await chat.request("inbox-list", {"status": rest.upper()} if rest else {})
        if reply["type"] == "error":
            chat.printer.error(reply["data"])
            return None
        items = reply["data"]["items"]
        if not items:
            chat.printer.line(Text(f"no {rest.upper() or 'OPEN'} inbox items", style="dim"))
        for item in reversed(items):  # oldest first, the newest next to the prompt
            chat.printer.inbox_items[item["id"]] = item
            chat.printer.line(inbox_panel(item))
    elif name == "answer":
        item_id, _, text = rest.partition(" ")
        if not item_id or not text.strip():
            chat.printer.line(Text("usage: /answer inb_N approve|reject|TEXT", style="yellow"))
            return None
        answer = answer_from_text(text, chat.printer.inbox_items.get(item_id))
        reply = await chat.request("inbox-answer", {"itemId": item_id, "answer": answer})
        if reply["type"] == "error":
            chat.printer.error(reply["data"])
        else:
            chat.printer.line(answered_text(reply["data"]))
    elif name == "space":
        await space_command(chat, rest)
    elif name == "dismiss":
        if not rest:
            chat.printer.line(Text("usage: /dismiss inb_N", style="yellow"))
            return None
        reply = await chat.request("inbox-dismiss", {"itemId": rest})
        show_reply(chat, reply, f"dismissed {rest}")
    else:
        chat.printer.line(Text(f"unknown command /{name}; /help lists them", style="yellow"))
    return None


async def undo(chat: ChatClient, process_id: str) -> str:
    """process-undo; the message taken back, to put back into the input line."""
    reply = await chat.request("process-undo", {"processId": process_id})
    if reply["type"] == "error":
        chat.printer.error(reply["data"])
        return ""
    undone = reply["data"]["undone"]
    parts = [f"undone: your message #{undone['seq']} and {undone['messages']} messages"]
    if undone["stoppedProcesses"]:
        parts.append("stopped " + ", ".join(undone["stoppedProcesses"]))
    if undone["dismissedItems"]:
        parts.append("dismissed " + ", ".join(undone["dismissedItems"]))
    chat.printer.line(Text("; ".join(parts), style="green"))
    for note in undone["notUndone"]:
        chat.printer.line(Text(f"  not undone: {note['text']}", style="yellow"))
    return give_back(chat, undone["text"])


async def unsend(chat: ChatClient, rest: str) -> str:
    """process-unsend of message SEQ (default: the last one sent) to the chat process."""
    last_seq, last_text = chat.sent or (0, "")
    seq = int(rest) if rest.isdigit() else last_seq
    if (rest and not rest.isdigit()) or not seq:
        chat.printer.line(Text("usage: /unsend [SEQ] (after a message was sent)", "yellow"))
        return ""
    process_id = chat.printer.chat_process_id or ""
    reply = await chat.request("process-unsend", {"processId": process_id, "seq": seq})
    if reply["type"] == "error":
        chat.printer.error(reply["data"])
        return ""
    chat.printer.line(Text(f"unsent message #{seq}", style="green"))
    return give_back(chat, last_text if seq == last_seq else "")


def give_back(chat: ChatClient, text: str) -> str:
    """The message goes back into the input line (on a terminal), else it is shown."""
    if text and chat.router.edits_lines:
        chat.printer.line(Text("edit it and press Enter to send it again", style="dim"))
    elif text:
        chat.printer.line(Text(f"your message: {text}", style="dim"))
    return text


async def show_tree(chat: ChatClient, process_id: str | None, node_id: str | None = None) -> None:
    """The process's tree as the Brain has it now (process-get), not as last shown; with
    `node_id`, that node whole."""
    if not process_id:
        chat.printer.line(Text("no task tree seen in this chat yet; /tree tp_N", style="yellow"))
        return
    reply = await chat.request("process-get", {"processId": process_id})
    if reply["type"] == "error":
        chat.printer.error(reply["data"])
        return
    tree = reply["data"]["process"].get("taskTree")
    if tree is None:
        chat.printer.line(Text(f"{process_id} has no task tree", style="dim"))
    elif node_id:
        chat.printer.line(node_detail(process_id, tree, node_id))
    else:
        chat.printer.line(task_tree(process_id, tree))


def show_reply(chat: ChatClient, reply: dict[str, Any], success: str) -> None:
    if reply["type"] == "error":
        chat.printer.error(reply["data"])
    else:
        chat.printer.line(Text(success, style="green"))


async def show_whole_inbox(chat: ChatClient) -> None:
    """`/inbox all`: the items of every status, as one table, the newest last."""
    items: list[dict[str, Any]] = []
    for status in INBOX_STATUSES:
        reply = await chat.request("inbox-list", {"status": status})
        if reply["type"] == "error":
            chat.printer.error(reply["data"])
            return
        items.extend(reply["data"]["items"])
    items.sort(key=lambda item: str(item.get("createdAt") or ""))
    for item in items:
        chat.printer.inbox_items[item["id"]] = item
    chat.printer.line(inbox_table(items, f"Inbox: all ({len(items)})"))
