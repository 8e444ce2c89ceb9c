"""arthur — the session chat: a reactive tool loop that starts and steers workers.

Every message runs one tool loop (LLM step `chat`, at most `maxSteps` calls): the LLM answers in
chat, or calls the orchestration tools (`process_create`, `process_steer`, `process_stop`,
`process_list`, `process_status`, on arthur's own children only), or any tool of its pool.
A child's report comes back as a message too: arthur's LLM reads it (`[report from tp_N
(engine): STATUS]`) and tells the person; a substantial result is also kept as an OUTPUT_TEXT
inbox item. A child that is BLOCKED with a question asks the
person: as an inbox QUESTION item when the inbox is there (an APPROVAL item when the child asks
for an approval, as vogon's checkpoint does; the answer is steered back to the child), else in
the chat (the person's next message is steered back to it).

Its params, not where it stands, make it a chat or a worker: with `finishAfterGoal: true` (its
default) it works its goal and closes DONE with its answer once none of its own workers is
still open; with `reportTo: parent` (its default), without the inbox, a worker's question goes
up to its parent (arthur BLOCKED, asking it) instead of to the person. A session's chat process
gets `finishAfterGoal: false, reportTo: user` beneath its recipe's params (the lane's chat
role): it never reaches DONE and asks the person in the chat.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from typing_extensions import override

from engines.base import Contract, Summary, ThinkEngine
from engines.capabilities import LlmMessage, StructuredOutputError, ToolCall, ToolSchema
from engines.context import CapabilityNotAvailable, Finish
from engines.messages import Control, InboxAnswer, ParentReport
from engines.registry import register_engine

if TYPE_CHECKING:
    from engines.capabilities import ProcessView
    from engines.context import ThinkEngineContext
    from engines.messages import PendingMessage

_ID = {"type": "string", "pattern": "^tp_[0-9]+$"}
STATUSES = ["INIT", "RUNNING", "IDLE", "BLOCKED", "PAUSED", "SUSPENDED", "CLOSED"]


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> Any:
    return ToolSchema(
        name=name,
        description=description,
        parameters={
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        },
    )


ORCHESTRATION = [
    _tool(
        "process_create",
        "Start a worker process on a goal, from a recipe (e.g. deep-think) or an engine. It "
        "runs on its own and reports back when it is done or needs something.",
        {
            "recipe": {"type": "string"},
            "engine": {"type": "string"},
            "goal": {"type": "string", "minLength": 1},
            "params": {"type": "object"},
        },
        ["goal"],
    ),
    _tool(
        "process_steer",
        "Send a message to one of your workers.",
        {"processId": _ID, "message": {"type": "string", "minLength": 1}},
        ["processId", "message"],
    ),
    _tool("process_stop", "Stop one of your workers.", {"processId": _ID}, ["processId"]),
    _tool(
        "process_list",
        "List your workers.",
        {
            "status": {
                "enum": ["INIT", "RUNNING", "IDLE", "BLOCKED", "PAUSED", "SUSPENDED", "CLOSED"]
            }
        },
        [],
    ),
    _tool("process_status", "One worker's status.", {"processId": _ID}, ["processId"]),
]
ORCHESTRATION_NAMES = {schema.name for schema in ORCHESTRATION}
# A person's order in a thinking space (spaces/actions/human.py) and the one tool it names: the
# call is forced, so a model that would not choose it (a small one) still makes it.
ORDERS = {
    "suggest": "thinking_suggest",
    "checkpoint": "thinking_checkpoint",
    "return": "thinking_return",
    "fork handoff": "thinking_fork_handoff",
}
ORDER = re.compile(r"\[control: (suggest|checkpoint|return|fork handoff)\b")


def ordered_tool(message: PendingMessage) -> str | None:
    """The tool a control turn's order names, or None for any other message."""
    if not isinstance(message, Control):
        return None
    found = ORDER.match(message.text)
    return ORDERS[found[1]] if found else None


@register_engine
class Arthur(ThinkEngine):
    name = "arthur"
    title = "Arthur"
    description = (
        "Session chat: answers, and starts, steers and stops worker processes for the person; "
        "turns their reports into chat and asks the person what they need to know."
    )
    version = "1.0.0"
    # The thinking-space tools by name: a pattern would make every pool ask for MCP tools.
    allowed_tools = frozenset(
        {
            "inbox_post",
            "memory_read",
            "memory_write",
            "memory_search",
            "memory_neighbours",
            "memory_edges",
            "thinking_start",
            "thinking_suggest",
            "thinking_split",
            "thinking_fork_handoff",
            "thinking_checkpoint",
            "thinking_return",
            "thinking_status",
        }
    )
    contract: ClassVar[Contract] = Contract(chat_process=True)
    default_settings = {
        "systemPrompt": (
            "You are Arthur, the person's assistant. Answer directly when you can. For work "
            "that takes planning or many steps, start a worker with process_create (recipe "
            "deep-think for deep work) and tell the person you did; when a worker reports, "
            "tell the person what it found."
        ),
        "maxSteps": 6,
        # A worker's DONE report at least this long is also kept as an OUTPUT_TEXT item.
        "outputTextMinChars": 500,
        # A worker's: close DONE once it answered and none of its own is open.
        "finishAfterGoal": True,
        # A worker's: a question of its workers goes to its parent ("user": to the chat).
        "reportTo": "parent",
    }
    setting_descriptions = {
        "systemPrompt": "The system prompt when the recipe gives no prompt prefix.",
        "maxSteps": "LLM calls per chat message (each may call tools).",
        "outputTextMinChars": "A worker's DONE report at least this long is also kept as an "
        "OUTPUT_TEXT inbox item.",
    }

    @override
    def start(self, process: ProcessView, ctx: ThinkEngineContext) -> None:
        process.engine_state = {"questions": {}, "asking": None}
        if process.goal:
            # A worker's goal: its tool loop runs in the lane, not in whoever started it.
            ctx.defer_turn(process.goal)

    @override
    def steer(self, process: ProcessView, ctx: ThinkEngineContext, message: PendingMessage) -> None:
        state = {"questions": {}, "asking": None, **process.engine_state}
        if not self._route_question(ctx, state, message):
            if isinstance(message, ParentReport) and message.event == "DONE":
                self._keep_result(ctx, message)
            text = message.prompt_text()
            if not isinstance(message, ParentReport):
                ctx.events.chat_message("user", text, at_once=True)
            ctx.conversation.append(LlmMessage(role="user", content=text))
            ordered = ordered_tool(message)
            answer = self._loop(ctx) if ordered is None else self._obey(ctx, ordered)
            finishes = ctx.settings.get("finishAfterGoal") is True
            if answer is not None and finishes and not self._working(ctx):
                # A worker's goal is reached once it answers and none of its own is open.
                state["result"] = answer
                ctx.finish(Finish.DONE)
        process.engine_state = state

    def _route_question(
        self, ctx: ThinkEngineContext, state: dict[str, Any], message: PendingMessage
    ) -> bool:
        """A worker's question to the person, or the person's answer to one: handled here
        (True), without the LLM."""
        if isinstance(message, ParentReport) and message.event == "BLOCKED":
            question = str(message.payload.get("question") or "")
            if question and not message.error:
                approval = bool(message.payload.get("approval"))
                self._ask(ctx, state, message.child_id, question, approval=approval)
                return True
        if isinstance(message, InboxAnswer) and message.item_id in state["questions"]:
            self._pass_answer(ctx, state["questions"].pop(message.item_id), message.text)
            return True
        if state.get("asking") and not isinstance(message, ParentReport | InboxAnswer):
            # The person's answer to the question asked in the chat (or the parent's, to the
            # question a worker arthur passed up).
            child, state["asking"] = state["asking"], None
            state.pop("asked", None)
            self._say(ctx, "user", message.text, at_once=True)
            self._pass_answer(ctx, child, message.text)
            return True
        return False

    @staticmethod
    def _say(
        ctx: ThinkEngineContext,
        role: Literal["user", "assistant"],
        text: str,
        *,
        at_once: bool = False,
    ) -> None:
        """Into the conversation and the chat alike."""
        ctx.conversation.append(LlmMessage(role=role, content=text))
        ctx.events.chat_message(role, text, at_once=at_once)

    def _loop(self, ctx: ThinkEngineContext) -> str | None:
        """The tool loop on the conversation; its answer, or None if the steps ran out while
        the LLM still called tools."""
        tools = [*ORCHESTRATION, *ctx.tools.schemas()]
        answer, finished = "", False
        for _ in range(int(ctx.settings.get("maxSteps", 6))):
            completion = ctx.llm.complete(ctx.prompt(), tools, step="chat")
            ctx.conversation.append_completion(completion)
            answer = completion.text
            if not completion.tool_calls:
                finished = True
                break
            for call in completion.tool_calls:
                if call.name in ORCHESTRATION_NAMES:
                    result = self._orchestrate(ctx, call)
                    ctx.conversation.append(
                        LlmMessage(role="tool", content=result, tool_call_id=call.id)
                    )
                else:
                    ctx.tools.answer(call)
        if answer:
            ctx.events.chat_message("assistant", answer)
        return answer if finished else None

    def _obey(self, ctx: ThinkEngineContext, tool: str) -> str | None:
        """A person's order in a thinking space: one forced call of the tool it names (step
        `control`), run as the tool loop would; a model that gives no valid call is told in
        the chat, and the end of the turn lets go of the node's lock."""
        schema = next((s for s in ctx.tools.schemas() if s.name == tool), None)
        if schema is None:
            return self._loop(ctx)
        try:
            arguments = ctx.llm.structured(ctx.prompt(), schema, step="control")
        except StructuredOutputError as failed:
            self._say(ctx, "assistant", f"I could not do that: {failed}")
            return None
        call = ToolCall(f"call_{len(ctx.conversation.history())}", tool, arguments)
        ctx.conversation.append(LlmMessage(role="assistant", content="", tool_calls=(call,)))
        ctx.tools.answer(call)
        return None

    @staticmethod
    def _working(ctx: ThinkEngineContext) -> bool:
        """Whether one of its workers is still open (it will report)."""
        return any(child["status"] != "CLOSED" for child in ctx.processes.list())

    def _orchestrate(self, ctx: ThinkEngineContext, call: ToolCall) -> str:
        """One orchestration tool call; what the LLM reads back (never raises for a refusal)."""
        args = call.arguments
        try:
            if call.name == "process_create":
                child = ctx.processes.spawn(
                    goal=str(args["goal"]),
                    recipe=args.get("recipe"),
                    engine=args.get("engine"),
                    params=dict(args.get("params") or {}),
                )
                return json.dumps({"processId": child, "status": "starting"})
            if call.name == "process_steer":
                ctx.processes.steer(str(args["processId"]), str(args["message"]))
                return json.dumps({"processId": args["processId"], "steered": True})
            if call.name == "process_stop":
                ctx.processes.stop(str(args["processId"]))
                return json.dumps({"processId": args["processId"], "stopped": True})
            if call.name == "process_list":
                return json.dumps(ctx.processes.list(args.get("status")))
            return json.dumps(ctx.processes.status(str(args["processId"])))
        except KeyError as missing:
            return f"error: {call.name} needs {missing}"
        except CapabilityNotAvailable:
            raise
        except Exception as refused:  # a 404 or 409 of the Brain, said to the LLM
            return f"error: {refused}"

    def _keep_result(self, ctx: ThinkEngineContext, report: ParentReport) -> None:
        """A substantial result (a report the worker marks as one, e.g. marvin's aggregate, or
        a long one) is also kept as an OUTPUT_TEXT inbox item, where it outlives the chat."""
        substantial = "report" in report.payload or len(report.text) >= int(
            ctx.settings.get("outputTextMinChars", 500)
        )
        if not substantial:
            return
        try:
            ctx.inbox.post(
                kind="OUTPUT_TEXT", title=f"Result of {report.child_id}", body=report.text
            )
        except CapabilityNotAvailable:
            return  # the chat still tells the person

    def _ask(
        self,
        ctx: ThinkEngineContext,
        state: dict[str, Any],
        child: str,
        question: str,
        *,
        approval: bool = False,
    ) -> None:
        kind, title = ("APPROVAL", f"{child} asks for approval") if approval else ("QUESTION", "")
        try:
            item = ctx.inbox.post(
                kind=kind, title=title or f"{child} asks", body=question, asked_by=child
            )
        except CapabilityNotAvailable:
            state["asking"] = child
            if ctx.settings.get("reportTo") != "user":
                # A worker arthur has nobody to chat with: it asks its parent.
                state["asked"] = {"question": question, "approval": approval}
                ctx.block()
                return
            hint = " (answer approve or reject)" if approval else ""
            self._say(ctx, "assistant", f"{child} asks: {question}{hint}")
            return
        state["questions"][item] = child
        ctx.events.chat_message("assistant", f"{child} asks: {question} (inbox {item})")

    def _pass_answer(self, ctx: ThinkEngineContext, child: str, answer: str) -> None:
        try:
            ctx.processes.steer(child, answer)
        except Exception as refused:
            ctx.events.chat_message("assistant", f"I could not pass your answer on: {refused}")
            return
        self._say(ctx, "assistant", f"Passed on to {child}.")

    @override
    def summarize_for_parent(self, process: ProcessView, event: str) -> Summary:
        """A worker arthur's answer, or the question of one of its workers it passes up."""
        state = process.engine_state
        payload: dict[str, Any] = {"processId": process.public_id, "event": event}
        asked = state.get("asked")
        if event == "BLOCKED" and asked:
            payload["question"] = asked["question"]
            if asked["approval"]:
                payload |= {"approval": True, "options": ["approve", "reject"]}
            return Summary(f"**Question** ({state['asking']}): {asked['question']}", payload)
        if event == "DONE" and state.get("result"):
            return Summary(str(state["result"]), {**payload, "result": state["result"]})
        return super().summarize_for_parent(process, event)
