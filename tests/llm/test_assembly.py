"""Every call within its model's window: the assembly of one call from named parts."""

from __future__ import annotations

from vancetope.llm.assembly import Budget, assemble, budget_for, fold_lines, split
from vancetope.llm.base import LlmMessage, ToolCall, ToolSchema
from vancetope.llm.tokens import Tokens

SYSTEM = LlmMessage(role="system", content="You are a concise assistant.")
TOKENS = Tokens()


def turn(n: int, words: int = 60) -> list[LlmMessage]:
    said = f"turn {n}: " + " ".join(f"word{n}x{i}" for i in range(words))
    return [
        LlmMessage(role="user", content=said),
        LlmMessage(role="assistant", content=f"answer {n}: " + "ok " * words),
    ]


def chat(turns: int) -> list[LlmMessage]:
    history = [m for n in range(1, turns) for m in turn(n)]
    return [SYSTEM, *history, LlmMessage(role="user", content=f"turn {turns}: the newest")]


def part(assembled: object, name: str) -> dict[str, int]:
    parts = {p["name"]: p for p in assembled.report()["parts"]}  # type: ignore[attr-defined]
    return parts[name]


def test_a_conversation_that_fits_is_sent_whole_and_unchanged() -> None:
    # given a short chat and a large window
    messages = chat(3)
    budget = budget_for(8192, 512, None, TOKENS)

    # when
    assembled = assemble(messages, budget, TOKENS)

    # then
    assert assembled.messages == messages
    assert part(assembled, "recent")["leftOut"] == 0
    assert [p.name for p in assembled.parts] == ["system", "recent", "step"]
    assert assembled.tokens == TOKENS.messages(messages)


def test_a_long_conversation_keeps_the_newest_whole_turns_within_the_budget() -> None:
    # given sixty turns of about sixty words on a 2,048-token model
    messages = chat(60)
    budget = budget_for(2048, 4096, None, TOKENS)
    assert TOKENS.messages(messages) > 2 * budget.window

    # when
    assembled = assemble(messages, budget, TOKENS)

    # then what is sent fits, with the system prompt first and the newest message last
    assert TOKENS.messages(assembled.messages) <= budget.prompt
    assert assembled.tokens == TOKENS.messages(assembled.messages)
    assert assembled.messages[0] == SYSTEM
    assert assembled.messages[-1] == messages[-1]
    # and the turns sent are the newest ones, whole and in order, after a fold of the rest
    system, history, _ = split(assembled.messages)
    assert system[1].content.startswith("[")
    assert "earlier messages are not shown" in system[1].content
    sent = [m for m in history]
    assert sent == messages[len(messages) - 1 - len(sent) : -1]
    assert sent[0].role == "user"
    recent = part(assembled, "recent")
    assert recent["leftOut"] == len(messages) - 2 - len(sent)
    assert recent["messages"] == len(sent) > 0


def test_the_fold_of_left_out_turns_keeps_their_first_lines_from_the_oldest() -> None:
    # given a fact told in the first turn
    messages = [
        SYSTEM,
        LlmMessage(role="user", content="my code word is PELICAN-42\nremember it"),
        LlmMessage(role="assistant", content="noted"),
        *[m for n in range(2, 40) for m in turn(n)],
        LlmMessage(role="user", content="what is my code word?"),
    ]
    budget = budget_for(2048, 256, None, TOKENS)

    # when
    assembled = assemble(messages, budget, TOKENS)

    # then the first turn is left out, but its first line is in the fold that is sent
    assert messages[1] not in assembled.messages
    fold = assembled.messages[1].content
    assert "- my code word is PELICAN-42" in fold
    assert "remember it" not in fold
    assert TOKENS.messages(assembled.messages) <= budget.prompt


def test_a_summary_and_recalled_messages_stand_in_for_left_out_turns_within_their_shares() -> None:
    # given a long chat, the summary of its early turns and an earlier message recalled
    messages = chat(60)
    budget = budget_for(2048, 256, None, TOKENS)
    recalled = [LlmMessage(role="user", content="[recalled] my code word is PELICAN-42")]

    # when
    assembled = assemble(messages, budget, TOKENS, summary="We spoke of words.", recalled=recalled)

    # then both are sent: the summary after the system prompt, the recalled message after the
    # recent turns, next to the message it was found for
    assert assembled.messages[1].content.endswith("We spoke of words.")
    assert assembled.messages[-2] == recalled[0]
    assert part(assembled, "summary")["tokens"] <= budget.prompt * 0.15
    assert part(assembled, "recalled")["messages"] == 1
    assert TOKENS.messages(assembled.messages) <= budget.prompt


def test_a_long_tool_result_is_sent_cut_with_a_note_and_its_call_kept() -> None:
    # given a tool loop whose tool answered with a very long result
    call = ToolCall(id="call_1", name="read_file", arguments={"path": "big.log"})
    result = "START " + "line of the log\n" * 2000 + " END"
    messages = [
        SYSTEM,
        LlmMessage(role="user", content="what went wrong?"),
        LlmMessage(role="assistant", content="", tool_calls=(call,)),
        LlmMessage(role="tool", content=result, tool_call_id="call_1"),
    ]
    budget = budget_for(4096, 512, None, TOKENS)

    # when
    assembled = assemble(messages, budget, TOKENS)

    # then the result is cut to its share, its head and tail kept, saying what was cut
    sent = assembled.messages[-1]
    assert sent.tool_call_id == "call_1"
    assert TOKENS.message(sent) <= budget.prompt * 0.25
    assert sent.content.startswith("START ")
    assert sent.content.endswith(" END")
    assert f"of {len(result)} characters cut here" in sent.content
    assert assembled.messages[-2].tool_calls == (call,)
    assert part(assembled, "step")["cut"] == 1


def test_a_newest_message_larger_than_the_window_is_cut_to_fit() -> None:
    # given one message that alone is larger than the window
    messages = [SYSTEM, LlmMessage(role="user", content="word " * 5000)]
    budget = budget_for(1024, 256, None, TOKENS)

    # when
    assembled = assemble(messages, budget, TOKENS)

    # then it is sent cut, and the request fits
    assert TOKENS.messages(assembled.messages) <= budget.prompt
    assert "cut here to fit" in assembled.messages[-1].content


def test_the_budget_keeps_room_for_the_answer_the_tools_and_a_margin() -> None:
    tool = ToolSchema("search", "Search the web.", {"type": "object", "properties": {}})
    # a max_tokens larger than the window leaves the answer a quarter of it
    small = budget_for(2048, 4096, [tool], TOKENS)
    assert small.completion == 512
    assert small.tools == TOKENS.tools([tool]) > 0
    assert small.prompt == 2048 - 512 - small.tools - small.margin
    # a max_tokens that fits is kept
    assert budget_for(128_000, 4096, None, TOKENS).completion == 4096
    # counted with a tokenizer, the margin is smaller than with the estimate
    counted = Tokens(lambda text: len(text.split()))
    assert budget_for(8192, 512, None, counted).margin < budget_for(8192, 512, None, TOKENS).margin


def test_whole_turns_only_a_tool_call_never_goes_without_its_result() -> None:
    # given earlier turns with tool calls and results
    messages: list[LlmMessage] = [SYSTEM]
    for n in range(30):
        call = ToolCall(id=f"call_{n}", name="read_file", arguments={"path": f"f{n}"})
        messages += [
            LlmMessage(role="user", content=f"read file {n} " + "please " * 30),
            LlmMessage(role="assistant", content="", tool_calls=(call,)),
            LlmMessage(role="tool", content="contents " * 40, tool_call_id=f"call_{n}"),
            LlmMessage(role="assistant", content="done " * 10),
        ]
    messages.append(LlmMessage(role="user", content="and now?"))

    # when
    assembled = assemble(messages, Budget(2048, 512, 0, 64), TOKENS)

    # then every result sent has its call sent before it
    called = set()
    for message in assembled.messages:
        called |= {call.id for call in message.tool_calls}
        if message.role == "tool":
            assert message.tool_call_id in called


def test_fold_lines_are_the_user_messages_first_lines() -> None:
    left = [
        LlmMessage(role="user", content="first line\nsecond"),
        LlmMessage(role="assistant", content="an answer"),
        LlmMessage(role="user", content="  "),
    ]
    assert fold_lines(left) == "- first line"


def test_a_long_tool_loop_folds_its_oldest_exchanges_into_a_note_and_keeps_the_newest() -> None:
    # given a worker's turn: its goal, then thirty tool calls with long results
    messages = [SYSTEM, LlmMessage(role="user", content="Find the three largest moons.")]
    for n in range(30):
        call = ToolCall(id=f"call_{n}", name="search", arguments={"q": f"moon {n}"})
        messages += [
            LlmMessage(role="assistant", content="", tool_calls=(call,)),
            LlmMessage(role="tool", content=f"result {n}: " + "lunar " * 150, tool_call_id=call.id),
        ]
    budget = budget_for(4096, 512, None, TOKENS)

    # when the call is assembled
    assembled = assemble(messages, budget, TOKENS)

    # then it fits, with the goal first, a note of the folded calls, and the newest calls whole
    sent = assembled.messages
    assert TOKENS.messages(sent) <= budget.prompt
    assert sent[1].content == "Find the three largest moons."
    note = sent[2].content
    assert note.startswith("[Earlier in this task, ")
    assert '- search {"q": "moon 0"} → result 0: lunar lunar' in note
    assert sent[-1].content.startswith("result 29: ")
    assert sent[-2].tool_calls[0].id == "call_29"
    # and every result sent has its call sent before it
    called: set[str] = set()
    for message in sent:
        called |= {call.id for call in message.tool_calls}
        if message.role == "tool":
            assert message.tool_call_id in called
    step = {p["name"]: p for p in assembled.report()["parts"]}["step"]
    assert step["leftOut"] > 0
