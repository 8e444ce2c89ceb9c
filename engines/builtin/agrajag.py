"""agrajag — the tool-health service engine (docs/engines.md, "Service engines").

Spawned by the dispatcher's checker for a tool whose failures no rule explains, in the
project's system session, for the user whose call failed (ctx.acting_user_id). It probes the
tool as that user (tool_probe_as_user) with SAFE_PROBE tools only, lets the LLM judge the
evidence (it may write the verdict itself with tool_health_write), and always leaves a
ToolHealth row: if the LLM wrote none, the probe decides.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from typing_extensions import override

from engines.base import Contract, ThinkEngine
from engines.capabilities import LlmMessage
from engines.context import Finish
from engines.registry import register_engine

if TYPE_CHECKING:
    from engines.capabilities import ProcessView
    from engines.context import ThinkEngineContext
    from engines.messages import PendingMessage

WRITER = "tool_health_write"
PROBE = "tool_probe"
# The probe as the user whose call failed (ctx.acting_user_id): their client's tools too.
PROBE_AS_USER = "tool_probe_as_user"
# The checker's verdict for an error no rule explains.
AMBIGUOUS = "ambiguous"


@register_engine
class Agrajag(ThinkEngine):
    name = "agrajag"
    title = "Agrajag"
    description = (
        "Service engine: diagnoses ambiguous tool failures with SAFE_PROBE tools only and "
        "writes the tool's health."
    )
    version = "1.0.0"
    allowed_tools = frozenset({PROBE, PROBE_AS_USER, WRITER})
    default_settings = {
        "systemPrompt": (
            "You are Agrajag, who diagnoses failing tools. Read the failures and the probe "
            "result, then record the tool's health with tool_health_write: UP if it works, "
            "DEGRADED if it works sometimes, DOWN if it does not."
        ),
        "maxSteps": 3,
    }
    setting_descriptions = {
        "systemPrompt": "The system prompt when the recipe gives no prompt prefix.",
        "maxSteps": "LLM calls of one diagnosis.",
    }
    # Spawned for a tool it waits for its CONTROL message; that one turn diagnoses the tool
    # and closes the process DONE.
    contract = Contract(
        goal="Diagnose the failures of tool some_tool",
        params={"tool": "some_tool"},
        turn_finishes=True,
    )

    @override
    def start(self, process: ProcessView, ctx: ThinkEngineContext) -> None:
        # Spawned with a diagnosis, it waits for its CONTROL message (so the turn runs on a
        # worker, not in the failing tool's lane); without one there is nothing to do.
        if not ctx.settings.get("tool"):
            ctx.finish(Finish.DONE)

    @override
    def steer(self, process: ProcessView, ctx: ThinkEngineContext, message: PendingMessage) -> None:
        tool = str(ctx.settings.get("tool") or "")
        diagnosis_id = int(ctx.settings.get("diagnosisId") or 0)
        if not tool:
            ctx.finish(Finish.DONE)
            return
        failures = ctx.tool_health.failures(diagnosis_id)
        # The failure was a user's: the probe runs as them, where their tools are.
        probe_tool = PROBE if ctx.acting_user_id is None else PROBE_AS_USER
        probe = ctx.tools.invoke(
            probe_tool, {"tool": tool, "arguments": ctx.settings.get("probeArguments") or {}}
        )
        evidence = f"{failures}\nprobe: {probe.content}".strip()
        ctx.conversation.append(LlmMessage(role="user", content=f"Tool {tool}: {evidence}"))
        written = self._judge(process, ctx, tool)
        if not written:
            answer = probe.data if isinstance(probe.data, dict) else {}
            probe_ok = probe.ok and bool(answer.get("ok"))
            error = str(answer.get("error", probe.error))
            status, classification = self._verdict(ctx, probe_ok, error)
            ctx.tool_health.write(tool, status, classification, evidence)
        if diagnosis_id:
            ctx.tool_health.finish(diagnosis_id)
        status, classification = ctx.tool_health.current(tool)
        process.engine_state = {
            **process.engine_state,
            "tool": tool,
            "status": status,
            "classification": classification,
        }
        ctx.finish(Finish.DONE)

    def _judge(self, process: ProcessView, ctx: ThinkEngineContext, tool: str) -> bool:
        """Let the LLM read the evidence; True once it wrote the tool's health itself."""
        schemas = [s for s in ctx.tools.schemas() if s.name == WRITER] + ctx.tools.schemas(
            safety="SAFE_PROBE"
        )
        for _ in range(int(ctx.settings.get("maxSteps", 3))):
            completion = ctx.llm.complete(
                ctx.prompt(), schemas, stream_to_client=False, step="judge"
            )
            ctx.conversation.append_completion(completion)
            if not completion.tool_calls:
                return False
            for call in completion.tool_calls:
                # Its probe turn runs SAFE_PROBE tools only, whatever its recipe adds and
                # whatever the LLM names; the health writer is the one other tool it has.
                only = None if call.name == WRITER else "SAFE_PROBE"
                result = ctx.tools.answer(call, only_safety=only)
                if call.name == WRITER and result.ok and call.arguments.get("tool") == tool:
                    return True
        return False

    @staticmethod
    def _verdict(ctx: ThinkEngineContext, probe_ok: bool, error: str) -> tuple[str, str]:
        if probe_ok:
            return "UP", "transient"
        classification = ctx.tool_health.classify(error)
        if classification == AMBIGUOUS:
            return "DOWN", "unknown"
        return "DOWN", classification
