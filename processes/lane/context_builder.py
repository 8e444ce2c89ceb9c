"""Building a ThinkEngineContext: the capability implementations, put together for one call.

A new capability is one line here and its implementation with the app that owns its data;
engines/capabilities.py names the Protocol it implements.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from engines.base import ThinkEngine
from engines.context import ThinkEngineContext, TurnUsage
from engines.registry import get_engine
from processes.budgets import TreeBudget
from processes.capabilities.children import ChildProcesses
from processes.capabilities.conversation import ConversationBuffer
from processes.capabilities.kept import Kept
from processes.capabilities.llm import LlmAccess
from processes.capabilities.recall import recall_index
from processes.capabilities.tools import acting_user_of, toolbox_for
from processes.lane import lease as lanes
from processes.lane.interrupts import Boundary
from processes.lane.journal import TurnJournal, journal_enabled
from processes.models import PendingMessage, ThinkProcess
from processes.presenters import active_compaction
from processes.queries import session_facts
from processes.signals import context_built
from sessions_app.event_sink import Event, EventSink
from vancetope.config import keys
from vancetope.config.cascade import Effective, current_revision, session_values
from vancetope.config.llm import llm_config
from vancetope.errors import Conflict
from vancetope.llm.assembly import Folded
from vancetope.llm.base import CallInfo
from vancetope.llm.factory import get_provider
from vancetope.memory.capability import MemoryAccess
from vancetope.tools.health import ToolHealthAccess


def engine_of(process: ThinkProcess) -> ThinkEngine:
    engine = get_engine(process.think_engine)
    if engine is None:
        raise Conflict(f"think engine {process.think_engine!r} is not registered")
    return engine


# The params a session's chat process gets from where it stands: it talks with the person, so
# it stays open after an answer and asks the person (not a parent) what its workers ask. They
# lie beneath the recipe's params: a recipe that says otherwise makes its chat process a
# worker (or a worker recipe's process a chat), and no engine asks which one it is.
CHAT_ROLE: dict[str, object] = {"finishAfterGoal": False, "reportTo": "user"}


def engine_settings(
    engine: ThinkEngine,
    process: ThinkProcess,
    cascade: Effective | None = None,
    *,
    chat: bool = False,
) -> dict[str, object]:
    """Engine defaults ← the settings cascade (the engine's namespace, unprefixed, and the
    Brain's non-secret keys such as `llm.model`) ← the chat role (for the session's chat
    process) ← recipe params ← process params, and the recipe's prompt prefix."""
    snapshot = process.recipe_snapshot
    return {
        **engine.default_settings,
        **(cascade.for_engine(engine.name) if cascade is not None else {}),
        **(CHAT_ROLE if chat else {}),
        **snapshot.get("params", {}),
        **process.engine_params,
        "promptPrefix": snapshot.get("promptPrefix", ""),
    }


@dataclass(frozen=True)
class Prepared:
    """A context and the concrete parts of it the lane commits (the engine sees only the
    Protocols)."""

    ctx: ThinkEngineContext
    conversation: ConversationBuffer
    events: EventSink
    children: ChildProcesses
    llm: LlmAccess
    # The process's engine_params as the call found them: the commit writes them only if the
    # engine changed them (vogon's strategyState), so an operator's edit of a process's params
    # is never undone by a call that did not touch them.
    params_found: dict[str, Any]
    # The journal of the turn's attempt at its message (None: a lifecycle call, or off).
    journal: TurnJournal | None = None

    def engine_params_changes(self) -> dict[str, Any]:
        """The commit's change of engine_params, if the engine made one."""
        params = self.ctx.process.engine_params
        return {} if params == self.params_found else {"engine_params": params}


def build_context(
    engine: ThinkEngine,
    process: ThinkProcess,
    keeper: lanes.LeaseKeeper,
    queue_turn: Callable[[str], None],
    opening: Callable[[], list[Event]] | None = None,
    message: PendingMessage | None = None,
) -> Prepared:
    """`opening` runs inside the transaction that stores the call's first events (the lane
    starts its run that way). `message`: the pending message a turn answers, whose journal
    the turn's calls replay and extend (processes/lane/journal.py); None for a lifecycle
    call."""
    facts = session_facts(process.session_id)
    events = EventSink(
        process.session_id,
        process.public_id,
        settings.VANCETOPE_DELTA_INTERVAL_SECONDS,
        opening,
        keeps_chat=facts is None or facts.is_human,
    )
    usage = TurnUsage()
    boundary = Boundary(keeper)
    conversation = ConversationBuffer(process)
    chat = facts is not None and facts.chat_process_id == process.pk
    budget = TreeBudget(process, chat=chat)
    children = ChildProcesses(process)
    # The settings of the revision the lease read: no statement unless it is new here (a
    # context built outside a lane, with no lease, reads the revision).
    lease = keeper.lease
    revision = lease.settings_revision if lease is not None else current_revision()
    # What the lease read of the session's client is current for the turn that follows the
    # lease only: a later turn of the same run reads it again (it may have gone, or
    # registered tools, meanwhile).
    client = None
    if lease is not None:
        client, lease.session_client = lease.session_client, None
    cascade = session_values(process.session_id, revision)
    journal = (
        TurnJournal(message, lease, events)
        if message is not None and lease is not None and journal_enabled()
        else None
    )
    llm = LlmAccess(
        get_provider(llm_config(cascade)),
        events,
        usage,
        boundary,
        CallInfo(engine=process.think_engine, recipe=process.recipe_name),
        before_call=lambda: _before_llm_call(budget, usage),
        fallback_model=str(cascade.value(keys.FALLBACK_MODEL.name)),
        window_setting=int(cascade.value(keys.CONTEXT_WINDOW.name) or 0),
        model_size=str(cascade.value(keys.MODEL_SIZE.name)),
        folded=lambda: compaction_of(process.pk, (process.conversation_epoch, process.folds)),
        history=conversation.history,
        journal=journal,
    )
    ctx = ThinkEngineContext(
        process=process,
        llm=llm,
        conversation=conversation,
        events=events,
        settings=engine_settings(engine, process, cascade, chat=chat),
        usage=usage,
        tools=toolbox_for(
            process,
            engine.allowed_tools,
            boundary,
            conversation=conversation,
            events=events,
            client=client,
            health_revision=lease.tool_health_revision if lease is not None else None,
            journal=journal,
        ),
        processes=children,
        queue_turn=queue_turn,
    )
    if process.category == "service":
        ctx.tool_health = ToolHealthAccess(process.session.project_id, process.pk)
        ctx.acting_user_id = acting_user_of(process)
    # ctx.inbox and ctx.space: their apps set them (inbox/apps.py, spaces/apps.py).
    context_built.send(ThinkProcess, process=process, allowed_tools=engine.allowed_tools, ctx=ctx)
    ctx.memory = MemoryAccess(process.public_id, lambda: _whereabouts(process))
    if cascade.value(keys.RECALL.name):
        state = (process.conversation_epoch, process.folds)
        llm.recall = lambda text, folded: recall_index(process.pk, state, folded).search(text)
    params = copy.deepcopy(process.engine_params)
    return Prepared(ctx, conversation, events, children, llm, params, journal)


# The active compaction of recently driven processes, by (process, (conversation epoch, folds)):
# a compaction and its undo move `folds`, an undo of a turn the epoch, so a kept entry is never
# stale, and a turn of a long conversation reads no compaction row.
_compactions: Kept[Folded | None] = Kept(1024)


def compaction_of(process_id: int, state: tuple[int, int]) -> Folded | None:
    """The process's active compaction (processes/lane/compaction.py), as the calls use it."""

    def read() -> Folded | None:
        found = active_compaction(process_id)
        return None if found is None else Folded(found.summary, found.messages)

    return _compactions.get((process_id, state), read)


def forget_compactions() -> None:
    """Drop the kept compactions (tests: ids start again with every test's database)."""
    _compactions.clear()


def _whereabouts(process: ThinkProcess) -> tuple[int, int, int]:
    session = process.session
    return session.project_id, session.pk, session.owner_id


def _before_llm_call(budget: TreeBudget, usage: TurnUsage) -> None:
    """Every LLM call is checked against the tree's budget, then counted (run logs read it)."""
    budget.check_llm_call(usage.total)
    usage.llm_calls += 1
