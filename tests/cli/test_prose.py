"""Markdown in `vance` (vance/prose.py): an answer and an inbox item's body drawn formatted on
a terminal (headings and bold as text, tables with aligned columns and a rule, none of the
Markdown's marks left), and left as written where the output is no terminal (a pipe)."""

from __future__ import annotations

import io
import re
from typing import Any

from rich.console import Console

from tests.support.markdown_sample import SATURN_REPORT
from vance.inbox import inbox_panel
from vance.prose import LiveAnswer, PrintedAnswer, Prose, Said, Tail
from vance.render import EventPrinter

ANSWER = SATURN_REPORT
# The Markdown's own marks: none of them may be left on a terminal.
MARKS = ("**", "|---|", "| moons |", "# Saturn", "- first", "*7")
SGR = re.compile(r"\x1b\[[0-9;]*m")
# Every control sequence: colours, and the cursor hidden and shown by a live display.
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def terminal(width: int = 80, *, colours: bool = False) -> tuple[Console, io.StringIO]:
    """A console that is a terminal (as rich decides it for a TTY) writing into a string."""
    output = io.StringIO()
    console = Console(
        file=output,
        width=width,
        height=25,
        force_terminal=True,
        color_system="standard" if colours else None,
    )
    return console, output


def pipe(width: int = 80) -> tuple[Console, io.StringIO]:
    output = io.StringIO()
    return Console(file=output, width=width, color_system=None), output


def drawn(console: Console, output: io.StringIO, renderable: Any) -> str:
    console.print(renderable)
    return output.getvalue()


def assert_formatted(text: str) -> None:
    """`text` shows ANSWER formatted: the words, a table as a table, no Markdown marks."""
    for mark in MARKS:
        assert mark not in text, f"{mark!r} left in {text!r}"
    assert "Saturn report" in text
    assert "It has 95 moons and 7 rings." in text
    # the table: its header and rows in aligned columns, a rule under the header
    rows = [line for line in text.splitlines() if re.search(r"body|moons|rings", line)]
    assert [re.sub(r" +", " ", row.strip()) for row in rows[-3:]] == [
        "body count",
        "moons 95",
        "rings 7",
    ]
    assert len({row.index(row.split()[1]) for row in rows[-3:]}) == 1  # one column start
    assert "────" in text
    assert "• first" in text
    assert "• second" in text


def test_prose_is_markdown_on_a_terminal():
    console, output = terminal()
    assert_formatted(drawn(console, output, Prose(ANSWER)))


def test_prose_draws_bold_and_the_heading_bold_on_a_colour_terminal():
    console, output = terminal(colours=True)
    text = drawn(console, output, Prose(ANSWER))
    # bold (SGR 1) right before the bold words, which stand without their asterisks
    assert re.search(r"\x1b\[1m(\x1b\[[0-9;]*m)*95 moons", text)
    assert re.search(r"\x1b\[[0-9;]*1[0-9;]*m(\x1b\[[0-9;]*m)*Saturn report", text)
    assert_formatted(SGR.sub("", text))


def test_prose_is_the_text_as_written_where_the_output_is_no_terminal():
    console, output = pipe()
    assert drawn(console, output, Prose(ANSWER)) == ANSWER + "\n"


def test_an_answer_starts_beside_who_speaks_and_its_lines_stand_under_the_first():
    console, output = terminal()
    text = drawn(console, output, Said("brain › ", "It has **95 moons**.\n\n- one"))
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    assert lines == ["brain › It has 95 moons.", "         • one"]


def test_an_answer_is_one_line_of_text_as_written_in_a_pipe():
    console, output = pipe()
    assert drawn(console, output, Said("brain › ", "It has **95**.")) == (
        "brain › It has **95**.\n"
    )


def test_an_inbox_items_body_is_markdown_in_its_panel_on_a_terminal():
    item = {
        "id": "inb_7",
        "kind": "QUESTION",
        "status": "OPEN",
        "title": "Which moon first?",
        "body": ANSWER,
        "originProcessId": "tp_3",
    }
    console, output = terminal(width=60)
    text = drawn(console, output, inbox_panel(item))
    assert "Which moon first?" in text
    assert "answer with: /answer inb_7" in text
    inside = "\n".join(line.strip("│ ") for line in text.splitlines())
    assert_formatted(inside)
    # and as written in a pipe
    console, output = pipe(width=60)
    assert "It has **95 moons** and *7 rings*." in drawn(console, output, inbox_panel(item))


def test_a_tail_keeps_the_last_lines():
    console, output = terminal()
    text = drawn(console, output, Tail(Prose("one\n\ntwo\n\nthree"), 2))
    assert text.split() == ["three"]


def stream(printer: EventPrinter, text: str, final: str | None = None) -> Any:
    """`text` streamed word by word, then its stored message (`final`, if given); what showed
    it while it streamed (a LiveAnswer on a terminal, a PrintedAnswer elsewhere)."""
    drawing = None
    for word in re.findall(r"\s*\S+\s*", text):
        printer.on_chat_delta({"processId": "tp_1", "text": word})
        drawing = printer.answer
    printer.on_chat_message(
        {"processId": "tp_1", "role": "assistant", "text": text if final is None else final}
    )
    return drawing


def last_drawing(output: io.StringIO) -> str:
    """What a terminal shows last of the answer: its last drawing (from its `brain › `)."""
    text = ANSI.sub("", output.getvalue())
    return text[text.rindex("brain › ") :]


def test_a_streamed_answer_is_drawn_as_markdown_on_a_terminal():
    console, output = terminal(width=80)
    printer = EventPrinter(console, prompt=False)
    printer.chat_process_id = "tp_1"
    # when an answer streams in word by word, then its stored message arrives
    drawing = stream(printer, ANSWER)
    # then it was drawn live, its last drawing is the Markdown formatted, and the live
    # display is over
    assert isinstance(drawing, LiveAnswer)
    assert drawing.text == ANSWER
    assert_formatted(last_drawing(output))
    assert printer.answer is None
    assert printer.streaming is None
    assert not drawing.live.is_started


def test_the_stored_message_is_what_a_terminal_shows_last():
    console, output = terminal()
    printer = EventPrinter(console, prompt=False)
    printer.chat_process_id = "tp_1"
    # when the stream missed its end, the stored message is drawn in its place
    stream(printer, "# Saturn report\n\nIt has", final=ANSWER)
    assert_formatted(last_drawing(output))


def test_a_streamed_answer_is_printed_as_it_comes_in_a_pipe():
    console, output = pipe()
    printer = EventPrinter(console)
    printer.chat_process_id = "tp_1"
    assert isinstance(stream(printer, ANSWER), PrintedAnswer)
    assert output.getvalue() == "brain › " + ANSWER + "\n"


def test_a_whole_message_is_markdown_on_a_terminal():
    console, output = terminal()
    printer = EventPrinter(console, prompt=False)
    printer.chat_process_id = "tp_1"
    # a message whose deltas were not seen (a worker's, a replayed one) is printed whole
    printer.on_chat_message({"processId": "tp_1", "role": "assistant", "text": ANSWER})
    text = SGR.sub("", output.getvalue())
    assert text.startswith("brain › ")
    assert_formatted(text)


def test_an_answer_taken_up_half_way_draws_only_its_rest_at_the_end():
    console, output = terminal()
    printer = EventPrinter(console, prompt=False)
    printer.chat_process_id = "tp_1"
    printer.on_chat_delta({"processId": "tp_1", "text": "It has **95 moons** "})
    # when another line cuts the answer short, and the rest of it streams after that line
    printer.line("· tp_2 RUNNING")
    printer.on_chat_delta({"processId": "tp_1", "text": "and *7 rings*."})
    whole = "It has **95 moons** and *7 rings*."
    printer.on_chat_message({"processId": "tp_1", "role": "assistant", "text": whole})
    # then the last drawing is the rest, formatted: the start stays above, drawn once
    text = ANSI.sub("", output.getvalue())
    assert text.index("It has 95 moons") < text.index("· tp_2 RUNNING")
    drawing = [line.rstrip() for line in last_drawing(output).splitlines() if line.strip()]
    assert drawing == ["brain › and 7 rings."]


def test_a_workers_question_its_parent_posted_names_the_worker_first() -> None:
    # given an item arthur posted for marvin's question, and one marvin posted itself
    console, output = pipe(120)
    relayed = {"id": "inb_3", "kind": "QUESTION", "title": "tp_2 asks", "body": "Which?"}
    relayed |= {"originProcessId": "tp_1", "askedBy": "tp_2"}
    own = {**relayed, "id": "inb_4", "originProcessId": "tp_2", "askedBy": None}
    # when both are shown
    console.print(inbox_panel(relayed))
    console.print(inbox_panel(own))
    # then the first says who asked, through whom; the second only who posted it
    shown = output.getvalue()
    assert "inbox inb_3 · QUESTION · from tp_2, through tp_1" in shown
    assert "inbox inb_4 · QUESTION · from tp_2 " in shown
