"""The SQL shapes of a turn: statements with their literals blanked, and the lane's expected
statements."""

from __future__ import annotations

import re

from django.test.utils import CaptureQueriesContext

from processes.models import ConversationMessage, PendingMessage, ProcessTransition, ThinkProcess
from sessions_app.models import Session, SessionEvent
from triggers.models import RunLog

PROCESS = ThinkProcess._meta.db_table
PENDING = PendingMessage._meta.db_table
CONVERSATION = ConversationMessage._meta.db_table
TRANSITION = ProcessTransition._meta.db_table
SESSION = Session._meta.db_table
EVENT = SessionEvent._meta.db_table
RUN = RunLog._meta.db_table


# The lane draining the one message (arthur's turn that answers without calling a tool).
LANE = [
    # take the lease (compare-and-swap), returning the process row, the settings and tool
    # health revisions and where the session's client is: a worker that has the session's
    # settings of that revision reads none (else one SELECT of them follows the next
    # statement), and likewise the project's tools that are down
    f"UPDATE {PROCESS}",
    f"SELECT {PENDING}",  # the next pending message
    # the engine shows the user's message at once, and with it the run starts (RUNNING)
    "BEGIN",
    f"UPDATE {PROCESS}",  # IDLE -> RUNNING, fenced by the lease
    f"INSERT {TRANSITION}",  # its record
    f"UPDATE {SESSION}",  # the events' seqs
    f"INSERT {EVENT}",  # process-status RUNNING, the user's chat-message
    "COMMIT",
    # the LLM's answer, journaled with the message as it arrived (processes/lane/journal.py),
    # fenced by the lease: a retried turn would replay it rather than ask the model again
    f"UPDATE {PENDING}",
    # arthur (the chat engine of a person's session) offers tools: who calls and where its
    # client is, and which tools are down, came with the lease (no statement)
    # the commit of the turn, which also ends the run and lets the lane go
    "BEGIN",
    f"INSERT {CONVERSATION}",  # the user's message and the answer
    # usage, engine state, lengths, RUNNING -> IDLE and the lane let go, in one
    # compare-and-swap fenced by the lease: it holds only while no other message waits
    f"UPDATE {PROCESS}",
    f"INSERT {TRANSITION}",  # its record
    f"UPDATE {PENDING}",  # consume the message
    # the person's run log (trigger user), stored finished by the commit that ends the run:
    # the one statement a run log costs a turn (triggers/runs/human.py), returning its id
    # and project for its `run` event (stored with the other events below)
    f"INSERT {RUN}",
    f"UPDATE {SESSION}",  # the events' seqs
    f"INSERT {EVENT}",  # the held deltas, the answer's chat-message, process-status IDLE
    "COMMIT",
]


def shape(sql: str) -> str:
    """A statement as its verb and the table it names first (BEGIN IMMEDIATE is BEGIN)."""
    verb = sql.split()[0].upper()
    table = re.search(r'\b(?:UPDATE|INTO|FROM)\s+"?(\w+)', sql)
    return verb if table is None else f"{verb} {table[1]}"


def shapes(captured: CaptureQueriesContext) -> list[str]:
    return [shape(query["sql"]) for query in captured.captured_queries]
