"""The ThinkEngine interface (docs/engines.md "Adding an engine").

An engine is an algorithm, not an instance: it holds no per-process state in attributes. Every
call receives the process row (whose `engine_state` the engine owns) and a ThinkEngineContext
built fresh for that call, which is the engine's only way out (LLM, tools, events, …).

The lane calls `steer` once for every pending message it drains, in sequence order, with the
message as a typed object (engines/messages.py): that is where an engine does its turn's work.
`start` may drive a first turn itself (on the goal).

Only `start` and `steer` decide about the process (`ctx.finish`, `ctx.block`); `pause`,
`resume`, `suspend` and `stop` react to a decision already taken and must not make one.

Every engine declares a `contract`: the goal, params and role under which a new process of it
stays open after `start`. The contract test (tests/engines/test_contract.py) drives every
registered engine that way through the whole lifecycle, and checks what `Contract` promises.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from engines.capabilities import Definitions, ProcessView
    from engines.context import ThinkEngineContext
    from engines.messages import PendingMessage


@dataclass(frozen=True)
class Summary:
    """What a child tells its parent when it ends or blocks: Markdown for the parent's LLM,
    plus an optional structured payload for orchestrators."""

    human_summary: str
    payload: dict[str, Any] = field(default_factory=dict)


class ParamsRefused(ValueError):
    """A new process's params its engine cannot run with, refused before the process is
    created; `field` names the offending one as the request spells it
    (`params.strategy.phases[1].gate.all[0].op`)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Contract:
    """How to drive a new process of an engine through its whole lifecycle (start, a turn,
    pause, resume, suspend, stop, reset, start again, another turn). Under these conditions the
    process is open (IDLE or BLOCKED) after `start`; the contract test creates it that way."""

    # The goal and process params it is created with.
    goal: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    # Create it as its session's chat process (which gets the chat role's params, e.g.
    # `finishAfterGoal: false`), not as a worker: an engine that answers a worker's goal at
    # once and closes stays open only there.
    chat_process: bool = False
    # A one-shot engine (one job per process): its first turn ends the process DONE instead of
    # leaving it open, so the contract test runs that turn last.
    turn_finishes: bool = False
    # Its start queues a turn of its own (ctx.defer_turn), which the lane runs right after:
    # the contract test waits for that turn before the next call.
    start_defers_turn: bool = False

    def __post_init__(self) -> None:
        if self.chat_process and (self.goal or self.params):
            # Its session creates the chat process from a recipe: there is nowhere to put them.
            raise ValueError("a chat process is created by its session, with no goal or params")


class ThinkEngine(ABC):
    name: ClassVar[str]
    title: ClassVar[str]
    description: ClassVar[str]
    # Semantic version; a process whose stored major version differs goes CLOSED/STALE.
    version: ClassVar[str]
    # The engine's default tool pool; recipes add and remove from it.
    allowed_tools: ClassVar[frozenset[str]] = frozenset()
    # Other names a client may give as `thinkEngine` for this engine (marvin's `deep-think`,
    # the name its documented default recipe has): one name, whichever face is asked.
    aliases: ClassVar[tuple[str, ...]] = ()
    default_settings: ClassVar[dict[str, Any]] = {}
    # The defaults a tenant, group, project or session may override (the settings cascade,
    # README "Settings"): name → description. Each becomes the setting `<engine>.<name>`, typed
    # by its default, and reaches ctx.settings unprefixed; recipe and process params still
    # override it.
    setting_descriptions: ClassVar[dict[str, str]] = {}
    # The params that name a model its calls ask for (`ctx.llm`'s `model=`): a process is
    # created only if each names a configured one (the settings llm.model, llm.fallbackModel,
    # llm.models), else the create is a 400 naming `params.<name>`. An engine passes no other
    # value as a call's model.
    model_params: ClassVar[tuple[str, ...]] = ()
    # Its children's reports that are pending at once are steered in one turn: one `steer`
    # each, in order, on one context, then one commit that consumes them all (an engine that
    # waits on many children, marvin, would otherwise pay a turn's commit per report). Its
    # steer must replace process.engine_state, never change it in place: a turn whose later
    # report fails is retried from the state before its first.
    coalesce_reports: ClassVar[bool] = False
    # Required: how a process of this engine stays open after start (see Contract);
    # register_engine refuses an engine without one.
    contract: ClassVar[Contract]

    def prepare_params(self, params: dict[str, Any], definitions: Definitions) -> dict[str, Any]:
        """Before a process of this engine is created: the params it is created with (the
        recipe's, then the caller's), as they are to be stored. An engine whose params name a
        definition (vogon's strategy) resolves and checks it here through `definitions` and
        stores the copy, so a later edit of the definition never changes the process; a
        ParamsRefused refuses the process with the field named. The default keeps them."""
        return params

    @abstractmethod
    def start(self, process: ProcessView, ctx: ThinkEngineContext) -> None:
        """First call, from INIT: prepare engine_state; may drive a first turn on the goal."""

    @abstractmethod
    def steer(self, process: ProcessView, ctx: ThinkEngineContext, message: PendingMessage) -> None:
        """Integrate one pending message (user chat, steer, report, answer): one turn."""

    def pause(self, process: ProcessView, ctx: ThinkEngineContext) -> None:  # noqa: B027
        """The user paused the process; the lane has already stopped at a safe boundary."""

    def resume(self, process: ProcessView, ctx: ThinkEngineContext) -> None:  # noqa: B027
        """Back from PAUSED or SUSPENDED; the lane drains pending messages afterwards."""

    def suspend(self, process: ProcessView, ctx: ThinkEngineContext) -> None:  # noqa: B027
        """The system halted the process (disconnect, idle, shutdown, lease loss)."""

    def stop(self, process: ProcessView, ctx: ThinkEngineContext) -> None:  # noqa: B027
        """Final stop by the user, a parent or a session close."""

    def summarize_for_parent(self, process: ProcessView, event: str) -> Summary:
        """The report a parent receives when this process reaches DONE, BLOCKED, STOPPED or
        FAILED. The default is a generic status line; engines with a real result override it."""
        goal = process.goal or "(no goal)"
        return Summary(
            human_summary=f"Process {process.public_id} ({self.name}) is {event}: {goal}",
            payload={"processId": process.public_id, "event": event},
        )

    @classmethod
    def major_version(cls) -> str:
        return cls.version.split(".", 1)[0]

    @classmethod
    def describe(cls) -> dict[str, Any]:
        return {
            "name": cls.name,
            "title": cls.title,
            "description": cls.description,
            "version": cls.version,
            "aliases": list(cls.aliases),
            "allowedTools": sorted(cls.allowed_tools),
            "defaultSettings": dict(cls.default_settings),
        }
