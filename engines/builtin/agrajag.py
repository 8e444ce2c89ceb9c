"""agrajag — the tool-health service engine (seed 000 §7, §7b).

Spawned by the dispatcher's checker for a tool whose failures no rule explains, in the
project's system session. It probes the tool with SAFE_PROBE tools only, lets the LLM judge the
evidence (it may write the verdict itself with tool_health_write), and always leaves a
ToolHealth row: if the LLM wrote none, the probe decides.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from typing_extensions import override

from engines.base import ThinkEngine
from engines.registry import register_engine
from processes.states import CloseReason
from vancetope.llm.base import LlmMessage
from vancetope.tools.checker import Classification, classify
from vancetope.tools.health import finish_diagnosis, write_tool_health
from vancetope.tools.models import HealthStatus, Safety, ToolDiagnosis, ToolHealth

if TYPE_CHECKING:
    from engines.context import ThinkEngineContext
    from processes.models import PendingMessage, ThinkProcess

WRITER = "tool_health_write"
PROBE = "tool_probe"


@register_engine
class Agrajag(ThinkEngine):
    name = "agrajag"
    title = "Agrajag"
    description = (
        "Service engine: diagnoses ambiguous tool failures with SAFE_PROBE tools only and "
        "writes the tool's health."
    )
    version = "1.0.0"
    allowed_tools = frozenset({PROBE, WRITER})
    default_settings = {
        "systemPrompt": (
            "You are Agrajag, who diagnoses failing tools. Read the failures and the probe "
            "result, then record the tool's health with tool_health_write: UP if it works, "
            "DEGRADED if it works sometimes, DOWN if it does not."
        ),
        "maxSteps": 3,
    }

    @override
    def start(self, process: ThinkProcess, ctx: ThinkEngineContext) -> None:
        # Spawned with a diagnosis, it waits for its CONTROL message (so the turn runs on a
        # worker, not in the failing tool's lane); without one there is nothing to do.
        if not ctx.settings.get("tool"):
            ctx.finish(CloseReason.DONE)

    @override
    def steer(
        self, process: ThinkProcess, ctx: ThinkEngineContext, message: PendingMessage
    ) -> None:
        tool = str(ctx.settings.get("tool") or "")
        diagnosis_id = int(ctx.settings.get("diagnosisId") or 0)
        if not tool:
            ctx.finish(CloseReason.DONE)
            return
        diagnosis = ToolDiagnosis.objects.filter(pk=diagnosis_id).first()
        failures = (
            f"{diagnosis.failures} failure(s), last: {diagnosis.last_error}" if diagnosis else ""
        )
        probe = ctx.tools.invoke(
            PROBE, {"tool": tool, "arguments": ctx.settings.get("probeArguments") or {}}
        )
        evidence = f"{failures}\nprobe: {probe.content}".strip()
        ctx.conversation.append(LlmMessage(role="user", content=f"Tool {tool}: {evidence}"))
        written = self._judge(process, ctx, tool)
        if not written:
            answer = probe.data if isinstance(probe.data, dict) else {}
            probe_ok = probe.ok and bool(answer.get("ok"))
            status, classification = self._verdict(probe_ok, str(answer.get("error", probe.error)))
            write_tool_health(
                project_id=process.session.project_id,
                tool=tool,
                status=status,
                classification=classification,
                evidence=evidence,
                checked_by=process,
            )
        if diagnosis is not None:
            finish_diagnosis(diagnosis.pk)
        health = ToolHealth.objects.get(project_id=process.session.project_id, tool=tool)
        process.engine_state = {
            **process.engine_state,
            "tool": tool,
            "status": health.status,
            "classification": health.classification,
        }
        ctx.finish(CloseReason.DONE)

    def _judge(self, process: ThinkProcess, ctx: ThinkEngineContext, tool: str) -> bool:
        """Let the LLM read the evidence; True once it wrote the tool's health itself."""
        system = str(ctx.settings.get("promptPrefix") or ctx.settings.get("systemPrompt", ""))
        schemas = [s for s in ctx.tools.schemas() if s.name == WRITER] + ctx.tools.schemas(
            safety=Safety.SAFE_PROBE
        )
        for _ in range(int(ctx.settings.get("maxSteps", 3))):
            completion = ctx.llm.complete(
                [LlmMessage(role="system", content=system), *ctx.conversation.history()],
                schemas,
                stream_to_client=False,
            )
            ctx.conversation.append_completion(completion)
            if not completion.tool_calls:
                return False
            for call in completion.tool_calls:
                result = ctx.tools.answer(call)
                if call.name == WRITER and result.ok and call.arguments.get("tool") == tool:
                    return True
        return False

    @staticmethod
    def _verdict(probe_ok: bool, error: str) -> tuple[HealthStatus, str]:
        if probe_ok:
            return HealthStatus.UP, "transient"
        classification = classify(error)
        if classification == Classification.AMBIGUOUS:
            return HealthStatus.DOWN, "unknown"
        return HealthStatus.DOWN, str(classification)
