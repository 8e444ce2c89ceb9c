"""Staleness and recovery: what a restarted Brain (and the periodic sweep) puts right."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from engines.registry import is_compatible
from processes import transitions
from processes.lane import lease as lanes
from processes.lane.dispatch import dispatch_start, wake_lane
from processes.models import PendingMessage, ThinkProcess
from processes.states import WAKE_ON_MESSAGE, Status
from vancetope.observability import metrics

log = logging.getLogger(__name__)

# A pending message older than this on an idle lane lost its wake-up: the sweeper wakes it.
LOST_WAKE_AFTER = timedelta(seconds=5)
# Processes brought back per statement by recover_lanes.
RECOVER_CHUNK = 500


def expire_if_stale(process: ThinkProcess, lease: lanes.Lease | None = None) -> bool:
    """Close a process whose engine is gone or of another major version (CLOSED/STALE).
    True if its engine is not available (whoever closed it)."""
    if process.status == Status.CLOSED or is_compatible(
        process.think_engine, process.engine_version
    ):
        return False
    transitions.expire(
        process,
        f"engine {process.think_engine} {process.engine_version} not available",
        lease=lease,
    )
    return True


@dataclass(frozen=True)
class RecoveryReport:
    recovered: int
    expired: int
    woken: int


def recover_processes() -> RecoveryReport:
    """At start: close stale processes, then recover every lane (see recover_lanes)."""
    expired = 0
    engines = ThinkProcess.objects.exclude(status=Status.CLOSED).values_list(
        "think_engine", "engine_version"
    )
    # Ten thousand processes use a handful of engine versions: check each version once and
    # load only the processes of the incompatible ones.
    for engine, version in engines.distinct().order_by():
        if is_compatible(engine, version):
            continue
        stale = ThinkProcess.objects.exclude(status=Status.CLOSED).filter(
            think_engine=engine, engine_version=version
        )
        for process in stale.select_related("session"):
            if expire_if_stale(process):
                expired += 1
    lanes_report = recover_lanes(min_pending_age=timedelta(0))
    return RecoveryReport(lanes_report.recovered, expired, lanes_report.woken)


def remove_abandoned_spawns(now: datetime, process_ids: Iterable[int] | None = None) -> int:
    """Remove children whose spawning turn never committed: still INIT, still the turn's
    (`uncommitted_spawn`), and nobody holds their parent's lane, so that turn is over (a
    crash, or a failed attempt). They never ran and no client heard of them; the retried turn
    spawns what it needs, so one message never makes two trees, and the tree's budgets count
    only committed children. `process_ids`: only these (a failed attempt's own)."""
    if process_ids is None:
        which = Q(parent__lease_owner="") | Q(parent__lease_expires_at__lt=now)
    else:
        which = Q(pk__in=list(process_ids))
    abandoned = ThinkProcess.objects.filter(which, status=Status.INIT, uncommitted_spawn=True)
    removed = 0
    for process in abandoned:
        log.warning(
            "removing %s: the turn of %s that spawned it never committed",
            process.public_id,
            f"tp_{process.parent_id}",
        )
        with transaction.atomic():
            process.delete()
            if process.root_id is not None:
                # check_spawn counted it on the root's descendants when the turn spawned it.
                ThinkProcess.objects.filter(pk=process.root_id, descendants__gt=0).update(
                    descendants=F("descendants") - 1
                )
        removed += 1
    return removed


def recover_lanes(min_pending_age: timedelta) -> RecoveryReport:
    """Bring back processes left RUNNING by a dead worker (lease expired, or its owner was a
    process on this host that no longer runs) to IDLE, and wake every wakeable process whose
    oldest pending message has waited longer than `min_pending_age` with nobody on its lane,
    and start every spawned child (autostart) that is still INIT after that long."""
    now = timezone.now()
    running = ThinkProcess.objects.filter(status=Status.RUNNING).values_list(
        "pk", "lease_owner", "lease_expires_at", "lease_fence"
    )
    # Owners are host:pid:thread:random; whether one is dead depends on its host and pid.
    dead_workers: dict[str, bool] = {}
    candidates = []
    owners: dict[int, str] = {}
    for pk, owner, expires_at, fence in running:
        worker = ":".join(owner.split(":", 2)[:2])
        if worker not in dead_workers:
            dead_workers[worker] = not owner or lanes.owner_is_dead(owner)
        if dead_workers[worker] or expires_at is None or expires_at < now:
            candidates.append((pk, fence))
            owners[pk] = owner
    recovered = 0
    for start in range(0, len(candidates), RECOVER_CHUNK):
        recovered += transitions.recover_running(candidates[start : start + RECOVER_CHUNK], owners)
    metrics.lease_recovered(recovered)
    # Before any lane is woken again: its retried turn must not find its first try's children.
    remove_abandoned_spawns(now)
    waiting = (
        PendingMessage.objects.filter(
            consumed=False,
            created_at__lte=now - min_pending_age,
            process__status__in=WAKE_ON_MESSAGE,
        )
        .filter(Q(process__lease_owner="") | Q(process__lease_expires_at__lt=now))
        # One that waits for its LLM provider (BLOCKED with the error) tries again when a new
        # message or a resume comes, not on every sweep.
        .exclude(process__status=Status.BLOCKED, process__last_error__gt="")
        # Without order_by() the model's ordering (process, seq) joins the DISTINCT and every
        # message, not every process, would be woken.
        .order_by()
        .values_list("process_id", flat=True)
        .distinct()
    )
    woken = 0
    for process_id in waiting:
        wake_lane(process_id)
        woken += 1
    # Children whose parent's commit asked for their start, which the Brain did not get to.
    unstarted = ThinkProcess.objects.filter(
        status=Status.INIT, autostart=True, created_at__lte=now - min_pending_age
    )
    for process_id in unstarted.values_list("pk", flat=True):
        dispatch_start(process_id)
        woken += 1
    return RecoveryReport(recovered=recovered, expired=0, woken=woken)
