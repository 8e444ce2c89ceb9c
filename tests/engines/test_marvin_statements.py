"""The statements one WORKER node of a marvin tree costs the Brain, counted on every database
connection (the lanes run in the in-process worker's threads): its spawn, its start and first
turn in its own lane, its report, and marvin's turn on the report. A statement more per node
on that path fails here, not only as a slower bench/orchestration.py. Only the lanes'
statements are counted (the in-process worker's threads), not the test's polling.

The count is the difference between a tree of 2 and one of 6 workers, per added worker, so the
tree's fixed work (marvin's create, start and report) drops out. Workers run one at a time
(`maxParallel` 1), each reporting through report_result in its `act` step. Whether marvin's
lane is still held when a report arrives (it then drains the report without a new lease) is a
matter of timing, so the bound leaves room for that.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connections
from django.db.backends.signals import connection_created

from processes.states import CloseReason, Status
from tests.support.marvin import marvin, worker_reporting_in_act
from tests.support.waiting import settled

pytestmark = pytest.mark.django_db(transaction=True)

# Measured on SQLite: 50 statements per worker node one at a time (58-60 before the worker
# could report in `act`, the spawn, start and report used narrower and prepared statements,
# and a child's start went on to drive its first turn). marvin wakes once per report here; with
# workers at once (bench/orchestration.py, maxParallel 4) a wake takes several: about 42.
MAX_PER_NODE = 51


class Counter:
    def __init__(self) -> None:
        self.count = 0
        self.lock = threading.Lock()

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if threading.current_thread().name.startswith("lane"):
            with self.lock:
                self.count += 1
        return execute(sql, params, many, context)


@pytest.fixture
def counted() -> Any:
    counter = Counter()

    def wrap(sender: Any, connection: Any, **kwargs: Any) -> None:
        if counter not in connection.execute_wrappers:
            connection.execute_wrappers.append(counter)

    connection_created.connect(wrap, weak=False)
    for connection in connections.all(initialized_only=True):
        wrap(None, connection)
    yield counter
    connection_created.disconnect(wrap)
    for connection in connections.all(initialized_only=True):
        if counter in connection.execute_wrappers:
            connection.execute_wrappers.remove(counter)


def tree_statements(alice: Any, counter: Counter, workers: int) -> int:
    tasks = [
        {"kind": "WORKER", "title": f"Part {n}", "goal": f"do part {n} of {workers}"}
        for n in range(workers)
    ]
    before = counter.count
    process = marvin(alice, f"a tree of {workers}", tasks=tasks, maxParallel=1)
    done = settled(process.pk, Status.CLOSED)
    assert done.close_reason == CloseReason.DONE, done.last_error
    return counter.count - before


def test_a_worker_node_costs_a_bounded_number_of_statements(alice, script, counted):
    # given workers that report in their act step, and an aggregate
    script(
        [
            *worker_reporting_in_act(r"do part \d+ of \d+$", "done"),
            {"engine": "marvin", "step": "aggregate", "reply": "the report"},
        ]
    )
    # when trees of 2 and of 6 workers run
    small = tree_statements(alice, counted, 2)
    large = tree_statements(alice, counted, 6)
    # then each added worker node cost at most the bound
    per_node = (large - small) / 4
    assert per_node <= MAX_PER_NODE, (small, large, per_node)
