"""Who speaks: the labels of a conversation's messages (webui/speakers.py) and their twin in
the interactive page's script (webui/static/webui/speakers.js), run on the same messages,
including the real prompt texts of engines/messages.py."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from engines.messages import InboxAnswer, ParentReport, Unblocked
from tests.e2e.brain import ROOT
from webui.speakers import speaker_of

REPORT = ParentReport(1, "Seven rings.", child_id="tp_7", engine="ford", event="DONE")
# (role, text, processId, isChat, first) -> (kind, label)
CASES = [
    (("user", "hello there", "tp_1", True, True), ("person", "you")),
    (("assistant", "hi", "tp_1", True, False), ("assistant", "brain")),
    (("user", "count the rings", "tp_2", False, True), ("goal", "goal of tp_2")),
    (("user", "focus on 2024", "tp_2", False, False), ("control", "steer")),
    (("assistant", "7 rings", "tp_2", False, False), ("assistant", "tp_2 answers")),
    (("user", "[control: suggest]\nThe person asks", "tp_1", True, False),
     ("control", "control: suggest")),
    (("user", "[control: report] Call report_result", "tp_2", False, False),
     ("control", "control: report")),
    (("user", REPORT.prompt_text(), "tp_1", True, False), ("report", "report of tp_7: DONE")),
    (("user", InboxAnswer(2, "blue", item_id="inb_3").prompt_text(), "tp_1", True, False),
     ("inbox-answer", "inbox answer inb_3")),
    (("user", Unblocked(3, "{}", key="deploy").prompt_text(), "tp_1", True, False),
     ("event", "event deploy")),
    (("user", "[thinking: node_4 returned] Branch “Age” returned", "tp_1", True, False),
     ("space", "space: node_4 returned")),
    (("tool", "{}", "tp_1", True, False), ("tool", "tool result")),
]  # fmt: skip


@pytest.mark.parametrize(("message", "expected"), CASES)
def test_each_message_is_labelled_by_who_speaks(message, expected):
    role, text, process_id, is_chat, first = message
    speaker = speaker_of(role, text, process_id=process_id, is_chat=is_chat, first=first)
    assert (speaker.kind, speaker.label) == expected


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js to run the page script")
def test_the_pages_script_labels_every_message_as_the_server_does():
    script = ROOT / "webui" / "static" / "webui" / "speakers.js"
    cases = json.dumps([message for message, _ in CASES])
    program = (
        f"const s = require({json.dumps(str(script))});"
        f"console.log(JSON.stringify({cases}.map((m) => s.speakerOf(...m))));"
    )
    done = subprocess.run(
        ["node", "-e", program], capture_output=True, text=True, check=True, timeout=30
    )
    labelled = [(found["kind"], found["label"]) for found in json.loads(done.stdout)]
    assert labelled == [expected for _, expected in CASES]
