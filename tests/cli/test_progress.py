"""Workers' progress in `vance chat` (vance/progress.py), without a Brain: a deep think's workers
change status all the time, and the chat tells it as one progress line per tree (into a pipe: a
line per distinct summary; on a terminal: one line, drawn again in place above the prompt),
while the tree's owner, failures, questions and results still print as before."""

from __future__ import annotations

import io
import re
from typing import Any

from rich.console import Console

from tests.support.chat_client import event
from vance.render import PROMPT, EventPrinter

WORKERS = ["tp_3", "tp_4", "tp_5", "tp_6", "tp_7"]
SUMMARY = re.compile(r"^tp_2 deep think: ")
# A line of one process's status, as the chat prints a status change.
STATUS_LINE = re.compile(r"^· (tp_\d+) ([A-Z]+)")


def deep_think(status: str = "RUNNING", **titles: str) -> dict[str, Any]:
    """marvin's tree: a plan, five workers (n2…n6 run by tp_3…tp_7) and an aggregate."""
    nodes: list[dict[str, Any]] = [
        {"id": "n1", "parentId": None, "kind": "PLAN", "title": "Plan", "status": "DONE"}
    ]
    for index, worker in enumerate(WORKERS):
        node_id = f"n{index + 2}"
        nodes.append(
            {
                "id": node_id,
                "parentId": "n1",
                "kind": "WORKER",
                "title": titles.get(node_id, f"Part {index + 1}"),
                "status": status,
                "processId": worker,
            }
        )
    nodes.append({"id": "n7", "parentId": "n1", "kind": "AGGREGATE", "title": "Report",
                  "status": "PENDING"})  # fmt: skip
    return {"version": 2, "rootId": "n1", "nodes": nodes}


def status(process_id: str, value: str, reason: str | None = None) -> tuple[str, dict[str, Any]]:
    data: dict[str, Any] = {"processId": process_id, "status": value}
    if reason:
        data["closeReason"] = reason
    return "process-status", data


def worker_churn() -> list[tuple[str, dict[str, Any]]]:
    """What five workers send while they run: each goes IDLE and RUNNING twice, one waits for an
    answer (BLOCKED) and goes on, four end DONE, the last FAILED; the owner's own statuses
    between."""
    events = [("task-tree", {"processId": "tp_2", "tree": deep_think()}), status("tp_2", "IDLE")]
    for _ in range(2):
        events += [status(w, s) for w in WORKERS for s in ("IDLE", "RUNNING")]
    events += [status("tp_5", "BLOCKED"), status("tp_5", "RUNNING")]
    events += [status(w, "CLOSED", "DONE") for w in WORKERS[:4]]
    events += [status("tp_2", "RUNNING"), status("tp_7", "CLOSED", "FAILED")]
    return events


def pipe() -> tuple[EventPrinter, io.StringIO]:
    output = io.StringIO()
    return EventPrinter(Console(file=output, width=100, color_system=None)), output


def test_into_a_pipe_five_workers_print_one_line_per_distinct_summary_and_no_status_lines():
    printer, output = pipe()
    # when: the tree, then every status change of its five workers
    for name, data in worker_churn():
        printer.show(name, data)
    lines = output.getvalue().splitlines()
    # then: no worker's status change has a line of its own, but for the one that failed
    statuses = [m.groups() for line in lines if (m := STATUS_LINE.match(line))]
    assert [s for s in statuses if s[0] in WORKERS] == [("tp_7", "CLOSED")]
    # and the owner's own status changes print as before
    assert ("tp_2", "IDLE") in statuses
    assert ("tp_2", "RUNNING") in statuses
    # and the progress is one line per distinct summary, in order, none twice (the worker that
    # waited and went on brought back a summary printed before: not printed again)
    progress = [line for line in lines if SUMMARY.match(line)]
    assert progress == [
        "tp_2 deep think: 0 of 5 workers done, 4 running, 1 blocked",
        "tp_2 deep think: 1 of 5 workers done, 4 running",
        "tp_2 deep think: 2 of 5 workers done, 3 running",
        "tp_2 deep think: 3 of 5 workers done, 2 running",
        "tp_2 deep think: 4 of 5 workers done, 1 running",
        "tp_2 deep think: 4 of 5 workers done, 1 failed",
    ]
    assert len(progress) == len(set(progress))
    # and the other 26 worker events printed nothing else: below the tree (its heading and seven
    # nodes), only the owner's two lines and the failure's
    assert [line for line in lines[8:] if not SUMMARY.match(line)] == [
        "· tp_2 IDLE",
        "· tp_2 RUNNING",
        "· tp_7 CLOSED/FAILED",
    ]


def test_a_workers_finished_node_and_a_question_still_print_and_the_tree_finishes_once():
    printer, output = pipe()
    printer.show("task-tree", {"processId": "tp_2", "tree": deep_think()})
    # when a worker asks (an inbox item of its own), and the tree's nodes finish with results
    item = {"id": "inb_4", "kind": "QUESTION", "title": "Which moon?", "status": "OPEN",
            "originProcessId": "tp_4"}  # fmt: skip
    printer.show("inbox-item", {"item": item})
    done = deep_think("DONE")
    done["nodes"][1]["result"] = {"summary": "95 moons."}
    for worker in WORKERS:
        printer.show(*status(worker, "CLOSED", "DONE"))
    printer.show("task-tree", {"processId": "tp_2", "tree": done})
    printer.show(*status("tp_2", "CLOSED", "DONE"))
    text = output.getvalue()
    # then the question and each finished node's line (with its result) are there
    assert "Which moon?" in text
    assert "✓ tp_2 n2 Part 1 — DONE  95 moons." in text
    assert text.count("✓ tp_2 n") == 5
    # and the last summary once, the owner's end after it
    assert text.count("tp_2 deep think: 5 of 5 workers done") == 1
    assert "· tp_2 CLOSED/DONE" in text


def test_each_tree_has_its_own_line_and_a_strategy_says_so():
    printer, output = pipe()
    strategy = {
        "rootId": "strategy",
        "nodes": [
            {"id": "strategy", "parentId": None, "kind": "PLAN", "title": "Strategy s",
             "status": "RUNNING"},
            {"id": "phase-1", "parentId": "strategy", "kind": "WORKER", "title": "ask",
             "status": "RUNNING", "processId": "tp_9"},
        ],
    }  # fmt: skip
    printer.show("task-tree", {"processId": "tp_2", "tree": deep_think()})
    printer.show("task-tree", {"processId": "tp_8", "tree": strategy})
    # when a worker of each ends
    printer.show(*status("tp_9", "CLOSED", "DONE"))
    printer.show(*status("tp_3", "CLOSED", "DONE"))
    # then each tree's summary is its own, and a worker's status no line
    lines = output.getvalue().splitlines()
    assert "tp_8 strategy: 1 of 1 worker done" in lines
    assert "tp_2 deep think: 1 of 5 workers done, 4 running" in lines
    assert not [line for line in lines if line.startswith(("· tp_9", "· tp_3"))]


def test_a_process_no_tree_names_prints_its_status_as_before():
    printer, output = pipe()
    printer.show("task-tree", {"processId": "tp_2", "tree": deep_think()})
    printer.show(*status("tp_40", "RUNNING"))
    assert output.getvalue().splitlines()[-1] == "· tp_40 RUNNING"


# --- on a terminal --------------------------------------------------------------------------------

CONTROL = re.compile(r"\x1b\[([0-?]*)[ -/]*([@-~])")


def screen(raw: str) -> list[str]:
    """The rows a terminal shows after `raw`: text, CR, LF and the sequences the chat writes
    (cursor up, erase the line, erase below; others, colours and the cursor's visibility, are
    left out)."""
    rows: list[list[str]] = [[]]
    row = column = 0
    index = 0
    while index < len(raw):
        found = CONTROL.match(raw, index)
        if found:
            argument, final = found.group(1), found.group(2)
            if final == "A":
                row = max(0, row - int(argument or 1))
            elif final == "K" and argument == "2":
                rows[row] = []
            elif final == "J" and argument in {"", "0"}:
                del rows[row][column:]
                del rows[row + 1 :]
            index = found.end()
            continue
        char = raw[index]
        index += 1
        if char == "\r":
            column = 0
        elif char == "\n":
            row, column = row + 1, 0
            rows.extend([] for _ in range(row + 1 - len(rows)))
        else:
            rows[row][column:column] = [" "] * (column - len(rows[row]))
            rows[row][column : column + 1] = [char]
            column += 1
    return ["".join(cells).rstrip() for cells in rows]


def terminal() -> tuple[EventPrinter, io.StringIO]:
    output = io.StringIO()
    console = Console(
        file=output,
        width=100,
        height=40,
        force_terminal=True,
        color_system=None,
        _environ={"TERM": "xterm-256color"},  # not the run's own TERM, which may be `dumb`
    )
    return EventPrinter(console, prompt=True), output


def test_on_a_terminal_the_progress_is_one_line_drawn_again_in_place_above_the_prompt():
    printer, output = terminal()
    printer.show_prompt()
    events = worker_churn()
    # when the events arrive, the screen looked at after each
    summaries_on_screen = []
    for name, data in events:
        printer.show(name, data)
        rows = screen(output.getvalue())
        summaries_on_screen.append([row for row in rows if SUMMARY.match(row)])
    rows = screen(output.getvalue())
    # then: once the workers have reported, one summary at a time is on the screen, the last
    # row above the prompt, and it is the latest (the finished one stays as a line of its own)
    running = summaries_on_screen[3:-1]
    assert running
    assert all(len(shown) == 1 for shown in running)
    assert summaries_on_screen[-2] == ["tp_2 deep think: 4 of 5 workers done, 1 running"]
    # and once every worker has ended, the last summary is a line of its own, then the failure
    assert rows[-3:] == [
        "tp_2 deep think: 4 of 5 workers done, 1 failed",
        "· tp_7 CLOSED/FAILED",
        PROMPT.rstrip(),
    ]
    # and no earlier drawing of the progress line is left on the screen
    assert [row for row in rows if SUMMARY.match(row)] == [rows[-3]]
    # and the owner's own status printed above the progress line, which was drawn below it
    assert rows.index("· tp_2 RUNNING") < rows.index(
        "tp_2 deep think: 4 of 5 workers done, 1 failed"
    )
    # and no worker's IDLE or RUNNING line was ever written
    assert not re.search(r"· tp_[3-7] (IDLE|RUNNING)", output.getvalue())
    # and it was drawn in place: the cursor went back up to it
    assert "\x1b[1A" in output.getvalue()


def test_on_a_terminal_a_streaming_reply_is_not_cut_by_progress_and_the_line_comes_back_below():
    printer, output = terminal()
    printer.show("task-tree", {"processId": "tp_2", "tree": deep_think()})
    printer.show(*status("tp_3", "IDLE"))
    # when the chat process streams its reply while a worker ends
    printer.show("chat-delta", {"processId": "tp_1", "text": "Still "})
    printer.show(*status("tp_3", "CLOSED", "DONE"))
    printer.show("chat-delta", {"processId": "tp_1", "text": "thinking."})
    assert printer.streaming == "tp_1"  # the reply goes on streaming
    printer.show("chat-message", {"processId": "tp_1", "role": "assistant",
                                  "text": "Still thinking."})  # fmt: skip
    # then the reply is whole on the screen and the progress line is below it, once, up to date
    rows = screen(output.getvalue())
    summaries = [row for row in rows if SUMMARY.match(row)]
    assert summaries == ["tp_2 deep think: 1 of 5 workers done, 4 running"]
    assert rows.index(summaries[0]) > max(
        index for index, row in enumerate(rows) if "Still thinking." in row
    )


def test_on_a_terminal_a_typed_line_leaves_the_progress_line_above_it():
    printer, output = terminal()
    printer.show("task-tree", {"processId": "tp_2", "tree": deep_think()})
    printer.show_prompt()
    printer.show(*status("tp_3", "CLOSED", "DONE"))
    # when the user types a line (the terminal echoes it, and its newline)
    output.write("hello\n")
    printer.typed()
    printer.show(*status("tp_4", "CLOSED", "DONE"))
    # then what they typed stays, and the progress line is drawn again below it
    rows = screen(output.getvalue())
    assert f"{PROMPT}hello" in rows
    assert rows[-2] == "tp_2 deep think: 2 of 5 workers done, 3 running"
    assert rows.index(f"{PROMPT}hello") < len(rows) - 2


def test_titles_quotes_and_angle_brackets_show_as_written():
    # given a tree, a result and an inbox item whose texts have quotes and < >
    title = 'Compare "A" <b>'
    tree = deep_think(n2=title)
    tree["nodes"][1].update(status="DONE", result={"summary": 'He said "no" <i>twice</i>'})
    item = {"id": "inb_5", "kind": "QUESTION", "title": 'Keep "A" <b>?', "status": "OPEN"}
    for printer, output in (pipe(), terminal()):
        # when they are shown, and a reply quoting them
        printer.show("task-tree", {"processId": "tp_2", "tree": tree})
        printer.show("inbox-item", {"item": item})
        printer.show("chat-message", {"processId": "tp_1", "role": "assistant",
                                      "text": 'Saturn: "95" <moons>'})  # fmt: skip
        text = "\n".join(screen(output.getvalue()))
        # then each is shown as written, no HTML entity in place of a character
        assert f'WORKER {title} (n2)  DONE  tp_3  He said "no" <i>twice</i>' in text
        assert 'Keep "A" <b>?' in text
        assert 'Saturn: "95" <moons>' in text  # on a terminal too: Markdown's HTML as text
        assert not re.search(r"&(#\d+|lt|gt|quot|amp);", text)


def test_the_same_space_revision_prints_once_whichever_way_it_comes(client):
    chat, output, _ = client()
    space = {"id": "spc_1", "revision": 3, "nodes": [
        {"id": "node_1", "parentId": None, "sortOrder": 0, "title": "Saturn", "state": "active"}
    ]}  # fmt: skip
    # when the same revision comes as an event, again (a replay), then a newer one and the old
    chat._dispatch(event(1, "space-state", space=space))
    chat._dispatch(event(2, "space-state", space=dict(space)))
    chat._dispatch(event(3, "space-state", space={**space, "revision": 4}))
    chat._dispatch(event(4, "space-state", space=space))
    # then each revision printed once, none older after a newer one
    text = output.getvalue()
    assert text.count("space spc_1 (revision 3)") == 1
    assert text.count("space spc_1 (revision 4)") == 1
    assert text.index("(revision 3)") < text.index("(revision 4)")
