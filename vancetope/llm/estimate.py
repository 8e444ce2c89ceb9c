"""Token counts for a call whose server reported none.

Some OpenAI-compatible servers send no usage in a stream (llama.cpp's Python server ignores
`stream_options.include_usage`), and some gateways leave it out of Anthropic's events too.
Budgets (`maxTokens`), run logs and a project's spend must still see what a call cost, so the
provider estimates it and marks the Usage `estimated`.

The estimate is the rule of thumb OpenAI and Anthropic both document for English text: about
four characters a token, counted over everything the model reads (every message's content, the
tool calls it carries, the tools' names, descriptions and schemas as JSON) plus four tokens a
message for the chat template's role markers; the completion is its text and its tool calls'
names and arguments as JSON. It is rounded up, so an empty answer still costs one token and an
estimate errs towards a budget breach, never away from it. A provider that has the model's own
tokenizer (the local provider) counts with that instead.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from vancetope.llm.base import LlmMessage, ToolCall, ToolSchema, Usage

CHARS_PER_TOKEN = 4
# The role markers a chat template wraps each message in (`<|im_start|>user\n…<|im_end|>\n`).
TOKENS_PER_MESSAGE = 4


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def prompt_text(messages: Sequence[LlmMessage], tools: Sequence[ToolSchema] | None) -> str:
    """What the model reads of a call, as one text: messages, their tool calls, the tools."""
    parts = [message.content for message in messages]
    parts += [completion_text("", message.tool_calls) for message in messages]
    parts += [
        f"{tool.name} {tool.description} {json.dumps(tool.parameters)}" for tool in tools or ()
    ]
    return "".join(parts)


def completion_text(text: str, tool_calls: Sequence[ToolCall]) -> str:
    calls = "".join(f"{call.name}{json.dumps(call.arguments)}" for call in tool_calls)
    return text + calls


def estimate_usage(
    messages: Sequence[LlmMessage],
    tools: Sequence[ToolSchema] | None,
    text: str,
    tool_calls: Sequence[ToolCall],
) -> Usage:
    prompt = estimate_tokens(prompt_text(messages, tools)) + TOKENS_PER_MESSAGE * len(messages)
    completion = max(1, estimate_tokens(completion_text(text, tool_calls)))
    return Usage(prompt_tokens=prompt, completion_tokens=completion, estimated=True)
