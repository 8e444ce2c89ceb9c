"""`/undo` and `/unsend` in `vance chat` in a pseudo-terminal against a real Brain: the message
taken back opens the next input line, so Enter sends it again."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.terminal import Terminal
from tests.e2e.brain import Brain
from tests.support.vance_pty import Setup, login, remembered_session, vance

pytestmark = pytest.mark.embedded_brain


def test_undo_puts_the_message_back_into_the_input_line_and_enter_sends_it_again(
    setup: Setup,
):
    env, token, port, config_dir, work = setup
    brain = Brain(env, port)
    chat: Terminal | None = None
    try:
        login(config_dir, port, Path(env["VANCETOPE_VAR_DIR"]) / "token", work)
        chat = vance(config_dir, "chat", cwd=work)
        chat.expect(r"new session (sess_\d+)")
        chat.send_line("one")
        chat.expect(r"brain › echo: one")
        chat.send_line("two")
        chat.expect(r"brain › echo: two")
        # when the person undoes the last turn
        chat.send_line("/undo")
        chat.expect(r"undone: your message #2 and 2 messages")
        chat.expect(r"edit it and press Enter to send it again")
        # then "two" is in the input line: Enter alone sends it again
        chat.send_line("")
        chat.expect(r"brain › echo: two")
        # and an unsend of a message already answered says to undo it
        chat.send_line("/unsend")
        chat.expect(r"a turn has answered it; undo that turn instead")
        chat.send_line("/quit")
        assert chat.wait() == 0
        # the Brain shows the first exchange and the message sent again, once
        found = brain.get("/api/processes?session=" + remembered_session(config_dir), token)
        detail = brain.get(f"/api/processes/{found['results'][0]['id']}", token)
        assert [m["content"] for m in detail["conversation"]] == [
            "one",
            "echo: one",
            "two",
            "echo: two",
        ]
        assert detail["conversationLength"] == 6
    finally:
        if chat is not None:
            chat.close()
        brain.stop()
