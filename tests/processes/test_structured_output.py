"""`ctx.llm.structured` forces its tool, retries once with the error, and falls back to an
unforced call on a server that refuses the forced choice; token usage the server did not report
is estimated and marked. Driven through the real `openai` client against the local stub."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest

from engines.capabilities import StructuredOutputError
from engines.context import TurnUsage
from processes.capabilities.llm import LlmAccess
from tests.support.openai_stub import OpenAIStubServer, StubReply, StubToolCall
from vancetope.llm.base import LlmMessage, ToolSchema
from vancetope.llm.openai_provider import OpenAICompatibleProvider

VERDICT = ToolSchema(
    name="give_verdict",
    description="The verdict.",
    parameters={
        "type": "object",
        "properties": {"verdict": {"enum": ["pass", "fail"]}},
        "required": ["verdict"],
        "additionalProperties": False,
    },
)
FORCED = {"type": "function", "function": {"name": "give_verdict"}}
ASK = [LlmMessage(role="user", content="Is it good?")]


class Events:
    """What LlmAccess needs of the event sink: structured output streams nothing."""

    def __init__(self) -> None:
        self.deltas: list[str] = []

    def store_held(self) -> None:
        return None

    def chat_delta(self, text: str) -> None:
        self.deltas.append(text)


@pytest.fixture
def stub() -> Iterator[OpenAIStubServer]:
    with OpenAIStubServer() as server:
        yield server


def access(stub: OpenAIStubServer, usage: TurnUsage | None = None) -> LlmAccess:
    provider = OpenAICompatibleProvider(base_url=stub.base_url, model="m", max_retries=0)
    return LlmAccess(provider, cast(Any, Events()), usage or TurnUsage(), lambda: None)


def verdict(value: str) -> StubReply:
    return StubReply(tool_calls=(StubToolCall("give_verdict", {"verdict": value}),))


def test_a_structured_step_forces_its_tool(stub: OpenAIStubServer) -> None:
    # given
    stub.queue(verdict("pass"))

    # when
    answer = access(stub).structured(ASK, VERDICT, step="judge")

    # then
    assert answer == {"verdict": "pass"}
    assert stub.tool_choices == [FORCED]


def test_invalid_arguments_are_sent_back_once_still_forced(stub: OpenAIStubServer) -> None:
    # given a first answer outside the schema
    stub.queue(verdict("maybe"), verdict("fail"))

    # when
    answer = access(stub).structured(ASK, VERDICT, step="judge")

    # then the retry carried the error and forced the tool again
    assert answer == {"verdict": "fail"}
    assert stub.tool_choices == [FORCED, FORCED]
    retry = stub.requests[1]["messages"][-1]["content"]
    assert retry.startswith("[control: retry] invalid give_verdict arguments: verdict:")


def test_arguments_cut_off_at_the_token_limit_are_sent_back_not_a_provider_failure(
    stub: OpenAIStubServer,
) -> None:
    # given a call whose arguments end mid-string, then a whole one
    cut = StubReply(tool_calls=(StubToolCall("give_verdict", '{"verdict": "pa'),))
    stub.queue(cut, verdict("pass"))

    # when
    answer = access(stub).structured(ASK, VERDICT, step="judge")

    # then the second call was told what was wrong
    assert answer == {"verdict": "pass"}
    retry = stub.requests[1]["messages"][-1]["content"]
    assert retry.startswith("[control: retry] model sent invalid JSON arguments for tool")


def test_a_server_that_refuses_the_forced_choice_is_asked_unforced(
    stub: OpenAIStubServer,
) -> None:
    # given a server that answers 400 to tool_choice naming a function
    stub.refuse_forced_tool_choice = True
    stub.queue(verdict("pass"))

    # when
    answer = access(stub).structured(ASK, VERDICT, step="judge")

    # then the refused request, then the same request unforced, which answered
    assert answer == {"verdict": "pass"}
    assert stub.tool_choices == [FORCED, None]


def test_a_step_that_fails_after_a_refused_forced_choice_says_so(
    stub: OpenAIStubServer,
) -> None:
    # given a server that refuses the forced choice and whose model never calls the tool
    stub.refuse_forced_tool_choice = True
    stub.queue(StubReply(text="I think it is good."), StubReply(text="Really good."))

    # when / then the error names the missing call and the refusal
    with pytest.raises(StructuredOutputError) as failed:
        access(stub).structured(ASK, VERDICT, step="judge")
    assert str(failed.value).startswith("step judge: no give_verdict call in the answer")
    assert "asked without forcing it: OpenAI-compatible server" in str(failed.value)
    assert "refused tool_choice 'give_verdict': HTTP 400" in str(failed.value)
    # and the retry was not forced again: the refusal is remembered for the step
    assert stub.tool_choices == [FORCED, None, None]


def test_usage_the_server_did_not_report_is_estimated_and_marked(
    stub: OpenAIStubServer,
) -> None:
    # given a server that reports usage once and not the second time
    usage = TurnUsage()
    llm = access(stub, usage)
    stub.queue(StubReply(text="exact", usage=(10, 1)))
    llm.complete(ASK, step="answer")
    assert (usage.prompt_tokens, usage.completion_tokens, usage.estimated) == (10, 1, False)

    # when a call's usage is missing
    stub.queue(StubReply(text="a reply of 24 characters", omit_usage=True))
    llm.complete(ASK, step="answer")

    # then its estimate is added and the turn's usage is marked estimated
    assert usage.estimated is True
    assert (usage.prompt_tokens, usage.completion_tokens) == (10 + 3 + 4, 1 + 6)
