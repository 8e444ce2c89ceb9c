"""zaphod — a council: several heads answer the same question, a synthesizer compares them.

- Its start (or, without a goal, its first message) spawns one head per persona of
  `params.personas` (`[{name, persona}]`): a ford sub-process of the recipe `headRecipe`
  (default `zaphod-head`: ford with `finishAfterGoal`, step `head`), with the persona in its
  system prompt. All heads are spawned at once; each runs in its own lane and keeps its answer
  in its own conversation. The council records each head's process id in `engine_state` and
  ends its turn; every head's ParentReport wakes it.
- A head that reports DONE answered. A head that reports FAILED or STOPPED, or BLOCKED (its
  provider failed every attempt of its turn, `ParentReport.provider_failed`; or it waits for
  something a council cannot give) has failed for this council: it is named with its error,
  a blocked head is stopped, and the council goes on.
- When every head has reported: fewer answers than `quorum` (default: a majority) fail the
  council, naming each failed head and its error. Otherwise the `synthesize` step asks for a
  `council_synthesis` call (consensus, differences attributed to heads, conclusion, minority
  report); it is rendered as Markdown, the report. A synthesize call that fails (the provider,
  or no valid call after its retry) is made once more with the fallback model
  (`params.fallbackModel`, else the setting llm.fallbackModel) before the council fails with
  both errors. `params.synthesizerModel` and `params.fallbackModel` may name only configured
  models (llm.model, llm.fallbackModel, llm.models): the create refuses any other
  (`model_params`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from typing_extensions import override

from engines.base import Contract, Summary, ThinkEngine
from engines.capabilities import LlmMessage, ProviderError, StructuredOutputError, ToolSchema
from engines.context import Finish
from engines.messages import ParentReport
from engines.registry import register_engine

if TYPE_CHECKING:
    from engines.capabilities import ProcessView
    from engines.context import ThinkEngineContext
    from engines.messages import PendingMessage

SECTIONS = (
    ("consensus", "Consensus"),
    ("differences", "Differences"),
    ("conclusion", "Conclusion"),
    ("minorityReport", "Minority report"),
)


def synthesis_schema(heads: list[str]) -> ToolSchema:
    """The synthesizer's tool; a difference must name a head that answered."""
    return ToolSchema(
        name="council_synthesis",
        description="Compare the council's answers: what they agree on, where they differ "
        "(each position attributed to the head that holds it), the conclusion, and the "
        "strongest dissent as a minority report ('' if there is none).",
        parameters={
            "type": "object",
            "properties": {
                "consensus": {"type": "string", "minLength": 1},
                "differences": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "head": {"enum": heads},
                            "position": {"type": "string", "minLength": 1},
                        },
                        "required": ["head", "position"],
                        "additionalProperties": False,
                    },
                },
                "conclusion": {"type": "string", "minLength": 1},
                "minorityReport": {"type": "string"},
            },
            "required": ["consensus", "differences", "conclusion", "minorityReport"],
            "additionalProperties": False,
        },
    )


def _check_council(settings: Any) -> tuple[list[dict[str, Any]], int] | str:
    """The heads (one per persona) and the quorum, or what is wrong with the params."""
    personas = settings.get("personas")
    if not isinstance(personas, list) or not personas:
        return "params.personas: must be a non-empty list of {name, persona}"
    heads: list[dict[str, Any]] = []
    for index, entry in enumerate(personas):
        where = f"params.personas[{index}]"
        if not isinstance(entry, dict):
            return f"{where}: must be a mapping with name and persona"
        name, persona = entry.get("name"), entry.get("persona")
        if not isinstance(name, str) or not name.strip():
            return f"{where}.name: must be a non-empty string"
        if not isinstance(persona, str) or not persona.strip():
            return f"{where}.persona: must be a non-empty string"
        if any(head["name"] == name for head in heads):
            return f"{where}.name: {name!r} is already the name of another head"
        heads.append({"name": name, "persona": persona, "status": "PENDING"})
    quorum = settings.get("quorum")
    if quorum is None:
        quorum = len(heads) // 2 + 1
    if isinstance(quorum, bool) or not isinstance(quorum, int) or not 1 <= quorum <= len(heads):
        return f"params.quorum: must be an integer from 1 to {len(heads)}, got {quorum!r}"
    return heads, quorum


def _mark(head: dict[str, Any], status: str, **fields: Any) -> None:
    """A head's status in this council (PENDING, RUNNING, DONE, FAILED), not its process's."""
    head["status"] = status
    head.update(fields)


def _failure(head: dict[str, Any]) -> str:
    return f"{head['name']} ({head.get('processId', 'not spawned')}): {head['error']}"


def render(sections: dict[str, Any], failed: list[dict[str, Any]]) -> str:
    """The report: the four sections, then the heads that did not answer, with their errors."""
    differences = "\n".join(
        f"- **{item['head']}**: {item['position']}" for item in sections["differences"]
    )
    bodies = {
        **sections,
        "differences": differences or "None: the heads agree.",
        "minorityReport": sections["minorityReport"] or "None.",
    }
    parts = [f"## {title}\n\n{bodies[key]}" for key, title in SECTIONS]
    if failed:
        lines = "\n".join(f"- **{_failure(head)}**" for head in failed)
        parts.append(f"## Heads that did not answer\n\n{lines}")
    return "\n\n".join(parts)


@register_engine
class Zaphod(ThinkEngine):
    name = "zaphod"
    title = "Zaphod"
    description = (
        "Council: several heads (ford sub-processes, one persona each) answer the same "
        "question; a synthesizer returns consensus, differences, conclusion and a minority "
        "report."
    )
    version = "1.0.0"
    # Heads of a recipe that stays open after answering (plain ford) never report: the council
    # waits for them, open, through the whole lifecycle.
    contract: ClassVar[Contract] = Contract(
        goal="should we ship on Friday?", params={"headRecipe": "ford"}
    )
    # They choose the synthesizer's model: only among the configured ones.
    model_params = ("synthesizerModel", "fallbackModel")
    default_settings = {
        "systemPrompt": (
            "You are Zaphod, the synthesizer of a council. Compare the heads' answers fairly, "
            "attribute each position to its head, and call council_synthesis."
        ),
        "headRecipe": "zaphod-head",
    }
    setting_descriptions = {
        "systemPrompt": "The synthesizer's system prompt when the recipe gives no prompt prefix.",
        "headRecipe": "The recipe of each head.",
    }

    @override
    def start(self, process: ProcessView, ctx: ThinkEngineContext) -> None:
        council = _check_council(ctx.settings)
        if isinstance(council, str):
            ctx.finish(Finish.FAILED, error=council)
            return
        heads, quorum = council
        process.engine_state = {"heads": heads, "quorum": quorum, "steers": []}
        # A council without a goal (a session's chat) waits for its question.
        if process.goal:
            self._convene(process, ctx, process.goal)

    @override
    def steer(self, process: ProcessView, ctx: ThinkEngineContext, message: PendingMessage) -> None:
        state = process.engine_state
        if isinstance(message, ParentReport):
            self._report(ctx, state, message)
        elif "question" not in state:
            self._convene(process, ctx, message.prompt_text())
            return
        else:
            # Shown to the synthesizer.
            state["steers"].append(message.prompt_text())
        process.engine_state = state
        if "question" in state and not any(h["status"] == "RUNNING" for h in state["heads"]):
            self._conclude(process, ctx, state)

    def _convene(self, process: ProcessView, ctx: ThinkEngineContext, question: str) -> None:
        state = process.engine_state
        state["question"] = question
        ctx.conversation.append(LlmMessage(role="user", content=question))
        recipe = str(ctx.settings.get("headRecipe") or "zaphod-head")
        for head in state["heads"]:
            persona = f"Your persona: {head['name']}. {head['persona']}"
            child = ctx.processes.spawn(goal=question, recipe=recipe, params={"persona": persona})
            _mark(head, "RUNNING", processId=child)
        process.engine_state = state

    def _report(self, ctx: ThinkEngineContext, state: dict[str, Any], report: ParentReport) -> None:
        head = next((h for h in state["heads"] if h.get("processId") == report.child_id), None)
        if head is None or head["status"] != "RUNNING":
            return  # a head this council no longer waits for (one it stopped)
        if report.event == "DONE":
            answer = report.payload.get("answer")
            _mark(head, "DONE", answer=answer if isinstance(answer, str) else report.text)
            return
        if report.provider_failed:
            error = report.error
        elif report.event == "BLOCKED":
            error = f"BLOCKED without an answer: {report.error or report.text}"
        else:
            error = report.error or report.event
        _mark(head, "FAILED", error=error)
        ctx.events.notify(f"council head {head['name']} failed: {error}", "warning")
        if report.event == "BLOCKED" and ctx.processes.status(report.child_id)["status"] != (
            "CLOSED"
        ):
            # Nobody will answer it: its turn would only be tried again.
            ctx.processes.stop(report.child_id)

    def _conclude(
        self, process: ProcessView, ctx: ThinkEngineContext, state: dict[str, Any]
    ) -> None:
        answered = [h for h in state["heads"] if h["status"] == "DONE"]
        failed = [h for h in state["heads"] if h["status"] == "FAILED"]
        if len(answered) < state["quorum"]:
            named = "; ".join(_failure(head) for head in failed)
            ctx.finish(
                Finish.FAILED,
                error=f"quorum not met: {len(answered)} of {len(state['heads'])} heads "
                f"answered, {state['quorum']} needed; failed: {named}",
            )
            return
        sections = self._synthesize(ctx, state, answered, failed)
        if sections is None:
            return
        report = render(sections, failed)
        state.update(sections=sections, report=report)
        process.engine_state = state
        ctx.conversation.append(LlmMessage(role="assistant", content=report))
        ctx.events.chat_message("assistant", report)
        ctx.finish(Finish.DONE)

    def _synthesize(
        self,
        ctx: ThinkEngineContext,
        state: dict[str, Any],
        answered: list[dict[str, Any]],
        failed: list[dict[str, Any]],
    ) -> dict[str, Any] | None:
        """The synthesizer's sections, from the configured model or else the fallback; None
        when both failed (the council is then FAILED with both errors)."""
        answers = "\n\n".join(
            f"## {head['name']} ({head['persona']})\n{head['answer']}" for head in answered
        )
        ask = f"Synthesize the council's answers to: {state['question']}\n\n{answers}"
        if failed:
            ask += "\n\nHeads that did not answer: " + "; ".join(map(_failure, failed))
        if state["steers"]:
            ask += "\n\nThe person added:" + "".join(f"\n- {text}" for text in state["steers"])
        prompt = ctx.prompt(LlmMessage(role="user", content=ask))
        schema = synthesis_schema([head["name"] for head in answered])
        fallback = str(ctx.settings.get("fallbackModel") or ctx.llm.fallback_model or "")
        models = [str(ctx.settings.get("synthesizerModel") or "")]
        if fallback and fallback != models[0]:
            models.append(fallback)
        errors = []
        for model in models:
            shown = f"model {model}" if model else "the configured model"
            try:
                sections = ctx.llm.structured(prompt, schema, step="synthesize", model=model)
            except ProviderError as down:
                errors.append(f"{shown}: the LLM provider failed: {down}")
            except StructuredOutputError as invalid:
                errors.append(f"{shown}: {invalid}")
            else:
                state["synthesis"] = {"model": model, "errors": errors}
                return sections
        if len(models) == 1:
            errors.append("no fallback model (params.fallbackModel, VANCETOPE_LLM_FALLBACK_MODEL)")
        state["synthesis"] = {"model": None, "errors": errors}
        ctx.finish(Finish.FAILED, error="synthesize failed with " + "; then with ".join(errors))
        return None

    @override
    def summarize_for_parent(self, process: ProcessView, event: str) -> Summary:
        state = process.engine_state
        heads = [
            {key: head.get(key) for key in ("name", "persona", "processId", "status", "error")}
            for head in state.get("heads", [])
        ]
        payload: dict[str, Any] = {"processId": process.public_id, "event": event, "heads": heads}
        if event == "DONE" and state.get("report"):
            payload["sections"] = state["sections"]
            payload["report"] = state["report"]
            return Summary(str(state["report"]), payload)
        lines = "".join(
            f"\n- {head['name']}: {head['status']}"
            + (f" ({head['error']})" if head.get("error") else "")
            for head in heads
        )
        question = state.get("question") or process.goal or "(no question yet)"
        return Summary(f"Council {process.public_id} is {event}: {question}{lines}", payload)
