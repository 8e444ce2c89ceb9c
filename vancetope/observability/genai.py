"""One LLM call, observed: its span with the OpenTelemetry GenAI attributes, and its metrics.

`ctx.llm` (processes/capabilities/llm.py) makes one per call: `saw` each streamed item, sets
`usage` when the provider reports it, then `done` with the outcome. The span is started, not
made current (the call is a generator that yields to its caller between items).
"""

from __future__ import annotations

import json
from typing import Any

from vancetope.llm.base import LlmMessage, TextDelta, ToolCall, Usage
from vancetope.observability import metrics, tracing
from vancetope.observability.logs import facts


class LlmCallWatch:
    def __init__(self, provider: str, model: str, step: str, messages: list[LlmMessage]) -> None:
        self.provider = provider
        self.model = model
        self.usage: Usage | None = None
        self._content = False
        self._parts: list[str] = []
        self._calls: list[ToolCall] = []
        self._span = tracing.start(
            f"chat {model}",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": provider,
                # The attribute's older name, which many backends still read.
                "gen_ai.system": provider,
                "gen_ai.request.model": model,
                "vancetope.step": step,
            },
            kind="CLIENT",
        )
        if self._span is not None and tracing.content_enabled():
            self._content = True
            self._span.set_attribute("gen_ai.input.messages", _messages_json(messages))

    def assembled(self, report: dict[str, Any]) -> None:
        """What the call sent, part by part (vancetope/llm/assembly.py): the window, the
        budget and each part's tokens, as span attributes."""
        span = self._span
        if span is None:
            return
        if report.get("window"):
            span.set_attribute("vancetope.context.window", report["window"])
            span.set_attribute("vancetope.context.budget", report["budget"])
            span.set_attribute("gen_ai.request.max_tokens", report["maxTokens"])
        span.set_attribute("vancetope.context.tokens", report["tokens"])
        for part in report["parts"]:
            span.set_attribute(f"vancetope.context.{part['name']}.tokens", part["tokens"])
            if part["leftOut"]:
                span.set_attribute(f"vancetope.context.{part['name']}.left_out", part["leftOut"])

    def saw(self, item: TextDelta | ToolCall) -> None:
        if not self._content:
            return
        if isinstance(item, TextDelta):
            self._parts.append(item.text)
        else:
            self._calls.append(item)

    def done(self, outcome: str, error: BaseException | None = None) -> None:
        usage = self.usage or Usage(0, 0)
        metrics.llm_call(
            self.provider,
            self.model,
            facts().project,
            outcome,
            usage.prompt_tokens,
            usage.completion_tokens,
        )
        span = self._span
        if span is None:
            return
        if self.usage is not None:
            span.set_attribute("gen_ai.usage.input_tokens", usage.prompt_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", usage.completion_tokens)
            if usage.finish_reason:
                span.set_attribute("gen_ai.response.finish_reasons", [usage.finish_reason])
        if outcome == "interrupted":
            span.set_attribute("vancetope.interrupted", True)
        if self._content:
            answer = LlmMessage("assistant", "".join(self._parts), tuple(self._calls))
            span.set_attribute("gen_ai.output.messages", _messages_json([answer]))
        tracing.end(span, error)


def _messages_json(messages: list[LlmMessage]) -> str:
    """Messages in the GenAI conventions' shape: role and parts (text, tool calls, tool
    results)."""
    shaped: list[dict[str, Any]] = []
    for message in messages:
        parts: list[dict[str, Any]] = []
        if message.role == "tool":
            parts.append(
                {
                    "type": "tool_call_response",
                    "id": message.tool_call_id,
                    "response": message.content,
                }
            )
        elif message.content:
            parts.append({"type": "text", "content": message.content})
        for call in message.tool_calls:
            parts.append(
                {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}
            )
        shaped.append({"role": message.role, "parts": parts})
    return json.dumps(shaped, ensure_ascii=False, default=str)
