"""An LLM step that may consult the tools of the process's pool before it answers: marvin's
`aggregate` (a recipe that adds `memory_neighbours` and `memory_edges` lets it read the
knowledge graph around what its workers found). The pool is empty by default: the step is then
one call, as it always was."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engines.capabilities import LlmMessage

if TYPE_CHECKING:
    from engines.capabilities import Completion
    from engines.context import ThinkEngineContext

# Rounds of tool calls before the step must answer (its last call offers no tools).
MAX_ROUNDS = 3


def complete_consulting_tools(ctx: ThinkEngineContext, ask: str, *, step: str) -> Completion:
    """The step's answer to `ask`; each round of tool calls is answered (errors too, as the
    tool's result) in the step's own messages, which the process's conversation never keeps."""
    tools = ctx.tools.schemas()
    extra = [LlmMessage(role="user", content=ask)]
    completion = ctx.llm.complete(ctx.prompt(*extra), tools or None, step=step)
    for round_ in range(1, MAX_ROUNDS + 1):
        if not completion.tool_calls:
            break
        extra.append(
            LlmMessage(
                role="assistant", content=completion.text, tool_calls=tuple(completion.tool_calls)
            )
        )
        for call in completion.tool_calls:
            result = ctx.tools.invoke(call.name, call.arguments)
            extra.append(LlmMessage(role="tool", content=result.content, tool_call_id=call.id))
        offered = tools if round_ < MAX_ROUNDS else None
        completion = ctx.llm.complete(ctx.prompt(*extra), offered, step=step)
    return completion
