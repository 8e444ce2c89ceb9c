"""Shutting the in-process worker down: nothing its running turns start outlives it."""

from __future__ import annotations

import threading

from processes.lane import tasks
from processes.lane import worker as workers


def test_a_start_made_while_the_pool_shuts_down_is_refused_and_makes_no_new_pool(monkeypatch):
    # given a turn that is running when the pool is told to shut down, and spawns a child then
    in_turn, go_on = threading.Event(), threading.Event()
    spawned: list[object] = []

    def turn(process_id: int) -> None:
        in_turn.set()
        go_on.wait(5)
        spawned.append(workers.get_worker().submit_start(process_id + 1))

    monkeypatch.setattr(tasks.drive_lane_task, "run", turn)
    pool = workers.get_worker()
    pool.submit(1)
    assert in_turn.wait(5)
    stopper = threading.Thread(target=workers.shutdown_worker, kwargs={"wait": True})
    stopper.start()
    # when the turn spawns its child while the shutdown waits for it
    go_on.set()
    stopper.join(5)
    # then the start was refused (recovery starts such a child), and no pool is left running
    assert not stopper.is_alive()
    assert spawned == [None]
    assert workers._worker is None
    # and the next use of the worker gets a fresh pool
    fresh = workers.get_worker()
    assert fresh is not pool
    assert not fresh.stopping.is_set()
