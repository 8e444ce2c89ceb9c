"""`vance`: argument parsing and the one-shot REST commands. `vance chat` lives in chat.py.

Exit codes: 0 done; 1 the Brain refused (400, 404, 409, …) or the feature is not available on
this Brain; 2 usage; 3 not logged in or the token was refused (401/403); 4 Brain unreachable.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path

from rich.console import Console
from rich.text import Text

from vance.api import ApiError, BrainApi, BrainUnreachable
from vance.chat import ChatClient, ChatOptions
from vance.config import (
    Config,
    ConfigError,
    SessionMemory,
    load_config,
    normalise_server,
    save_config,
)
from vance.exits import EXIT_AUTH, EXIT_OK, EXIT_REFUSED, EXIT_UNREACHABLE, EXIT_USAGE
from vance.fingerprint import current_fingerprint
from vance.inbox import answer_from_text, answered_text, inbox_table
from vance.lines import LineRouter
from vance.render import (
    engines_table,
    notifications_table,
    process_table,
    recipes_table,
    runs_table,
)
from vance.sessions import list_sessions

LOCAL_BRAIN = "http://127.0.0.1:8000"
STATUSES = ("INIT", "RUNNING", "IDLE", "BLOCKED", "PAUSED", "SUSPENDED", "CLOSED")
INBOX_STATUSES = ("OPEN", "ANSWERED", "DISMISSED", "EXPIRED", "all")

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)


class NotAvailable(Exception):
    """The Brain has no endpoint for this command yet."""


def _upper_but_all(value: str) -> str:
    return value if value.lower() == "all" else value.upper()


def fail(message: str, code: int) -> int:
    err.print(Text(message, style="bold red"))
    return code


# --- commands ------------------------------------------------------------------------------------


def cmd_login(args: argparse.Namespace) -> int:
    if args.token_file:
        try:
            token = Path(args.token_file).expanduser().read_text(encoding="utf-8").strip()
        except OSError as exc:
            return fail(f"cannot read the token file: {exc}", EXIT_REFUSED)
    else:
        token = (args.token or "").strip()
    if not token:
        return fail("the token is empty", EXIT_REFUSED)
    try:
        config = Config(server=normalise_server(args.server), token=token)
    except ValueError as exc:
        return fail(str(exc), EXIT_REFUSED)
    try:
        BrainApi(config).get("sessions", limit=1)
    except BrainUnreachable as exc:
        err.print(Text(f"warning: {exc}; saved anyway, not verified", style="yellow"))
    # A 401 here propagates: a token the Brain refuses is not stored.
    path = save_config(config)
    out.print(f"Logged in to {config.server}; settings saved to {path} (mode 0600).")
    return EXIT_OK


def cmd_chat(args: argparse.Namespace) -> int:
    config = load_config()
    options = ChatOptions(
        project=args.project,
        recipe=args.recipe,
        assume_yes=args.yes,
        session_id=args.session,
        new_session=args.new,
    )

    async def chat() -> int:
        router = LineRouter()
        router.start()
        client = ChatClient(config, options, current_fingerprint(), out, router)
        return await client.run()

    try:
        return asyncio.run(chat())
    except KeyboardInterrupt:
        out.print()
        return 130


def cmd_sessions(args: argparse.Namespace) -> int:
    table, resumable = list_sessions(
        BrainApi(load_config()), current_fingerprint(), everything=args.all, limit=args.limit
    )
    out.print(table)
    if resumable:
        out.print(
            Text(
                f"Resume one: vance chat --session {resumable[0]} (any id in bold; from "
                "another directory its processes wait for /resume).",
                style="dim",
            )
        )
    return EXIT_OK


def cmd_processes(args: argparse.Namespace) -> int:
    rows, count = BrainApi(load_config()).results(
        "processes",
        status=args.status,
        session=args.session,
        engine=args.engine,
        category="service" if args.service else None,
        limit=args.limit,
    )
    title = "Service processes" if args.service else "Processes"
    out.print(process_table(rows, f"{title} ({len(rows)} of {count})"))
    return EXIT_OK


def cmd_steer(args: argparse.Namespace) -> int:
    reply = BrainApi(load_config()).post(
        f"processes/{args.process_id}/steer", {"message": args.message}
    )
    out.print(f"Steered {reply['processId']}; {reply['pending']} message(s) pending.")
    return EXIT_OK


def cmd_create(args: argparse.Namespace) -> int:
    config = load_config()
    session = args.session
    if not session:
        # This directory's chat session, as `vance chat` remembers it.
        working_dir = current_fingerprint().working_dir
        remembered = SessionMemory(config.server, args.project, working_dir).recall()
        if remembered is None:
            return fail(
                f"No session remembered for {working_dir}: run `vance chat` here once, or "
                "name one with --session sess_N (`vance processes` shows their sessions).",
                EXIT_USAGE,
            )
        session = remembered.session_id
    body = {
        "session": session,
        "goal": args.goal,
        "recipe": args.recipe,
        "thinkEngine": args.engine,
        "start": not args.no_start,
    }
    process = BrainApi(config).post("processes", body)
    line = Text(f"Created {process['id']} ({process['thinkEngine']}, recipe {process['recipe']}) ")
    line.append(f"in {process['sessionId']}: ")
    line.append(process["status"], style="bold")
    out.print(line)
    return EXIT_OK


def lifecycle(verb: str) -> Callable[[argparse.Namespace], int]:
    def command(args: argparse.Namespace) -> int:
        process = BrainApi(load_config()).post(f"processes/{args.process_id}/{verb}")
        line = Text(f"{process['id']}: ")
        line.append(process["status"], style="bold")
        if process.get("closeReason"):
            line.append(f" ({process['closeReason']})")
        out.print(line)
        return EXIT_OK

    return command


def cmd_uncompact(args: argparse.Namespace) -> int:
    """Undo the summary a process's calls send instead of its earliest turns."""
    reply = BrainApi(load_config()).post(f"processes/{args.process_id}/uncompact")
    compaction = reply["compaction"]
    out.print(
        Text(
            f"{reply['process']['id']}: summary {compaction['id']} undone; its "
            f"{compaction['turns']} turns are sent again as far as the window allows"
        )
    )
    return EXIT_OK


def cmd_engines(args: argparse.Namespace) -> int:
    rows, _ = BrainApi(load_config()).results("think-engines", limit=200)
    out.print(engines_table(rows))
    return EXIT_OK


def cmd_recipes(args: argparse.Namespace) -> int:
    rows, _ = BrainApi(load_config()).results("recipes", engine=args.engine, limit=500)
    out.print(recipes_table(rows))
    return EXIT_OK


def not_yet(feature: str, call: Callable[[], int]) -> int:
    """Run a command whose endpoint this Brain may not have; a route-level 404 (not the Brain's
    own not-found error) means the feature is not there."""
    try:
        return call()
    except ApiError as exc:
        if exc.endpoint_missing:
            return fail(f"{feature} are not available on this Brain yet.", EXIT_REFUSED)
        raise


def cmd_runs(args: argparse.Namespace) -> int:
    def listing() -> int:
        rows, count = BrainApi(load_config()).results(
            "runs",
            process=args.process,
            status=args.status,
            trigger=args.trigger,
            limit=args.limit,
        )
        out.print(runs_table(rows, f"Runs ({len(rows)} of {count})"))
        return EXIT_OK

    return not_yet("Run logs", listing)


def cmd_notifications(args: argparse.Namespace) -> int:
    api = BrainApi(load_config())
    if args.notifications_command == "read":
        marked = api.post(f"notifications/{args.notification_id}/read")
        out.print(f"Read {marked['id']}.")
        return EXIT_OK
    if args.notifications_command == "read-all":
        reply = api.post("notifications/read-all")
        out.print(f"Marked {reply['marked']} read.")
        return EXIT_OK
    rows, count = api.results(
        "notifications", unread="true" if args.unread else None, limit=args.limit
    )
    kind = "unread" if args.unread else "all"
    out.print(notifications_table(rows, f"Notifications: {kind} ({len(rows)} of {count})"))
    return EXIT_OK


def cmd_inbox(args: argparse.Namespace) -> int:
    api = BrainApi(load_config())
    if args.inbox_command == "answer":
        # The item's kind says how the typed answer reads (approve/reject, an option, text).
        item = api.get(f"inbox/{args.item_id}")
        answer = answer_from_text(args.answer, item)
        out.print(answered_text(api.post(f"inbox/{args.item_id}/answer", {"answer": answer})))
        return EXIT_OK
    if args.inbox_command == "dismiss":
        reply = api.post(f"inbox/{args.item_id}/dismiss")
        out.print(f"Dismissed {reply['item']['id']}.")
        return EXIT_OK
    status = None if args.status == "all" else args.status
    rows, count = api.results("inbox", status=status, limit=args.limit)
    out.print(inbox_table(rows, f"Inbox: {args.status} ({len(rows)} of {count})"))
    return EXIT_OK


# --- parsing -------------------------------------------------------------------------------------


def client_version() -> str:
    """The installed package's version (the Brain and vance ship together)."""
    try:
        return metadata.version("vancetope")
    except metadata.PackageNotFoundError:
        return "unknown (not installed; pip install -e .)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vance", description="The Vancetope Brain client.")
    parser.add_argument("--version", action="version", version=f"vance {client_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    login = commands.add_parser("login", help="store the Brain's URL and an API token")
    login.add_argument(
        "--server", default=LOCAL_BRAIN, help=f"the Brain's URL (default: {LOCAL_BRAIN})"
    )
    token = login.add_mutually_exclusive_group(required=True)
    token.add_argument("--token")
    token.add_argument("--token-file", help="a file holding the token (e.g. var/token)")
    login.set_defaults(run=cmd_login)

    chat = commands.add_parser("chat", help="chat in this directory's session")
    chat.add_argument("--project", default="proj_default")
    chat.add_argument("--recipe", help="chat recipe of a new session")
    chat.add_argument("--yes", "-y", action="store_true", help="run MUTATING tools unasked")
    chat.add_argument("--session", help="resume this session (sess_N) instead")
    chat.add_argument("--new", action="store_true", help="start a new session")
    chat.set_defaults(run=cmd_chat)

    sessions = commands.add_parser("sessions", help="list your chats, to resume one")
    sessions.add_argument("--all", action="store_true", help="the closed ones too")
    sessions.add_argument("--limit", type=int, default=15)
    sessions.set_defaults(run=cmd_sessions)

    processes = commands.add_parser("processes", help="list processes")
    processes.add_argument("--status", choices=STATUSES, type=str.upper)
    processes.add_argument("--session", help="sess_N")
    processes.add_argument("--engine", help="think engine name")
    processes.add_argument(
        "--service",
        action="store_true",
        help="list the processes of service recipes you started (left out otherwise)",
    )
    processes.add_argument("--limit", type=int, default=50)
    processes.set_defaults(run=cmd_processes)

    steer = commands.add_parser("steer", help="send a steering message to a process")
    steer.add_argument("process_id", metavar="tp_N")
    steer.add_argument("message")
    steer.set_defaults(run=cmd_steer)

    create = commands.add_parser("create", help="create (and start) a process with a goal")
    create.add_argument("goal", help="what the process is to do")
    create.add_argument("--recipe", help="a recipe name (`vance recipes` lists them)")
    create.add_argument("--engine", help="a think engine (`vance engines` lists them)")
    create.add_argument("--session", help="sess_N (default: this directory's chat session)")
    create.add_argument("--project", default="proj_default", help="the project of that session")
    create.add_argument("--no-start", action="store_true", help="leave it INIT; `vance start`")
    create.set_defaults(run=cmd_create)

    for verb in ("start", "pause", "resume", "stop", "reset"):
        command = commands.add_parser(verb, help=f"{verb} a process")
        command.add_argument("process_id", metavar="tp_N")
        command.set_defaults(run=lifecycle(verb))

    uncompact = commands.add_parser(
        "uncompact", help="undo the summary of a process's earliest turns (its compaction)"
    )
    uncompact.add_argument("process_id", metavar="tp_N")
    uncompact.set_defaults(run=cmd_uncompact)

    engines = commands.add_parser("engines", help="list think engines")
    engines.set_defaults(run=cmd_engines)

    recipes = commands.add_parser("recipes", help="list recipes")
    recipes.add_argument("--engine", help="only recipes of this engine")
    recipes.set_defaults(run=cmd_recipes)

    runs = commands.add_parser("runs", help="list run logs")
    # --engine: the option's first name, kept for scripts that use it.
    runs.add_argument(
        "--process", "--engine", dest="process", metavar="tp_N", help="the runs of this process"
    )
    runs.add_argument(
        "--status", choices=["running", "completed", "completed_partial", "blocked", "failed"]
    )
    runs.add_argument("--trigger", choices=["user", "cron", "webhook", "workflow", "brain_linker"])
    runs.add_argument("--limit", type=int, default=50)
    runs.set_defaults(run=cmd_runs)

    inbox = commands.add_parser("inbox", help="list inbox items, answer or dismiss one")
    inbox.add_argument("--status", choices=INBOX_STATUSES, type=_upper_but_all, default="OPEN")
    inbox.add_argument("--limit", type=int, default=50)
    inbox_commands = inbox.add_subparsers(dest="inbox_command", metavar="answer|dismiss")
    answer = inbox_commands.add_parser("answer", help="answer an inbox item")
    answer.add_argument("item_id", metavar="inb_N")
    answer.add_argument("answer", help="approve|reject [comment], one of its options, or text")
    dismiss = inbox_commands.add_parser("dismiss", help="put an inbox item away unanswered")
    dismiss.add_argument("item_id", metavar="inb_N")
    inbox.set_defaults(run=cmd_inbox)

    notifications = commands.add_parser(
        "notifications", help="list notifications, mark one or all read"
    )
    notifications.add_argument("--unread", action="store_true", help="only the unread ones")
    notifications.add_argument("--limit", type=int, default=50)
    notification_commands = notifications.add_subparsers(
        dest="notifications_command", metavar="read|read-all"
    )
    read = notification_commands.add_parser("read", help="mark a notification read")
    read.add_argument("notification_id", metavar="ntf_N")
    notification_commands.add_parser("read-all", help="mark every notification read")
    notifications.set_defaults(run=cmd_notifications)
    return parser


def explain(exc: ApiError) -> int:
    if exc.status == 401:
        return fail(
            f"The Brain refused the token (401 {exc.error}: {exc.message}). "
            "Run `vance login` with a valid token.",
            EXIT_AUTH,
        )
    if exc.status == 403:
        return fail(f"Not allowed (403): {exc.message}", EXIT_AUTH)
    if exc.status == 404:
        if exc.endpoint_missing:
            return fail("This Brain has no such endpoint (404).", EXIT_REFUSED)
        return fail(f"Not found (404): {exc.message}", EXIT_REFUSED)
    if exc.status == 409:
        if "inbox item" in exc.message:
            why = "Its status does not allow this; `vance inbox --status all` shows it."
        else:
            why = "The process's status does not allow this; `vance processes` shows it."
        return fail(f"Refused (409 {exc.error}): {exc.message}. {why}", EXIT_REFUSED)
    return fail(f"The Brain answered {exc.status} {exc.error}: {exc.message}", EXIT_REFUSED)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except ConfigError as exc:
        return fail(str(exc), EXIT_AUTH)
    except BrainUnreachable as exc:
        return fail(f"{exc}. Is the Brain running?", EXIT_UNREACHABLE)
    except ApiError as exc:
        return explain(exc)


if __name__ == "__main__":
    sys.exit(main())
