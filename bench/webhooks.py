"""Inbound webhooks: signed deliveries from C concurrent senders for D seconds against a real
Brain over HTTP.

The Brain is `manage.py brain` in its own OS process (BenchBrain): on the embedded default
(SQLite, in-memory channel layer, in-process worker), and, when DATABASE_URL and REDIS_URL are
both set, also on PostgreSQL + Redis (a throwaway database and channel prefix). One
signature-mode webhook (Standard Webhooks v1) is created over REST; its action is
`unblock_tasks` with a key that matches no process, which is cheap but real: every accepted
delivery verifies its HMAC, claims its delivery id, opens a system session (client type
`webhook`), writes a RunLog and closes the session.

Each sender is a thread with its own keep-alive HTTP connection, signing each delivery with the
standardwebhooks package (a fresh webhook-id per delivery); every 10th request replays the
sender's previous id, which must answer 200 with the first run's id and run nothing. A
delivery is timed from sending its request to reading its answer. Afterwards the database
must hold exactly one run per accepted delivery id, and no run for a replay.

Budget: >= 300 accepted deliveries/s on the embedded default.

    .venv/bin/python bench/webhooks.py [--senders 10] [--duration 30]

See bench/README.md.
"""

from __future__ import annotations

import argparse
import http.client
import json
import platform
import sys
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from common import (
    BenchBrain,
    BenchFailure,
    Deployment,
    HelpFormatter,
    PySpy,
    available_runtimes,
    percentile,
    print_log_warnings,
    print_table,
)
from standardwebhooks import Webhook as Signer

BUDGET_PER_SECOND = 300.0
REPLAY_EVERY = 10


@dataclass
class Sender:
    latencies: list[float] = field(default_factory=list)
    # delivery id -> the run id its first delivery answered
    accepted: dict[str, str] = field(default_factory=dict)
    replays: int = 0
    replay_mismatches: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _rest(url: str, token: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{url}{path}",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return dict(json.load(response))


def send(host: str, port: int, hook: dict[str, Any], stop_at: float, out: Sender) -> None:
    signer = Signer(hook["secret"])
    connection = http.client.HTTPConnection(host, port, timeout=30)
    path = hook["url"]
    previous = ""
    count = 0
    while time.perf_counter() < stop_at:
        count += 1
        replay = bool(previous) and count % REPLAY_EVERY == 0
        msg_id = previous if replay else f"msg_{uuid.uuid4().hex}"
        body = json.dumps({"build": msg_id, "status": "passed"})
        now = datetime.now(tz=UTC)
        headers = {
            "Content-Type": "application/json",
            "webhook-id": msg_id,
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": signer.sign(msg_id, now, body),
        }
        started = time.perf_counter()
        try:
            connection.request("POST", path, body=body.encode(), headers=headers)
            response = connection.getresponse()
            raw = response.read()
            answer = json.loads(raw or b"{}")
        except ValueError:
            out.errors.append(f"{response.status}: not JSON: {raw[:200]!r}")
            continue
        except (OSError, http.client.HTTPException) as exc:
            out.errors.append(f"{type(exc).__name__}: {exc}")
            connection.close()
            connection = http.client.HTTPConnection(host, port, timeout=30)
            continue
        elapsed = time.perf_counter() - started
        if response.status != 200:
            out.errors.append(f"{response.status}: {answer}")
            continue
        if replay:
            out.replays += 1
            if answer != {"runId": out.accepted.get(msg_id), "replayed": True}:
                out.replay_mismatches.append(f"{msg_id}: {answer}")
            continue
        out.latencies.append(elapsed)
        out.accepted[msg_id] = str(answer.get("runId"))
        previous = msg_id
    connection.close()


def run_once(runtime: str, args: argparse.Namespace) -> dict[str, Any]:
    with Deployment(runtime, "webhooks") as deployment:
        brain = BenchBrain(deployment)
        try:
            hook = _rest(
                brain.url,
                deployment.token,
                "/api/webhooks",
                {
                    "name": "bench",
                    "mode": "signature",
                    "action": {
                        "type": "unblock_tasks",
                        "match": {"blockedByExternal": "bench:${event.build}"},
                    },
                },
            )
            host, port = brain.url.removeprefix("http://").split(":")
            senders = [Sender() for _ in range(args.senders)]
            warm = time.perf_counter() + args.warmup
            warmers = [
                threading.Thread(target=send, args=(host, int(port), hook, warm, Sender()))
                for _ in range(args.senders)
            ]
            for thread in warmers:
                thread.start()
            for thread in warmers:
                thread.join()
            cpu_before = brain.cpu_seconds()
            started = time.perf_counter()
            stop_at = started + args.duration
            threads = [
                threading.Thread(target=send, args=(host, int(port), hook, stop_at, sender))
                for sender in senders
            ]
            with PySpy(brain.pid, args.py_spy if runtime == "embedded" else None):
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
            wall = time.perf_counter() - started
            cpu = brain.cpu_seconds() - cpu_before
            runs = _runs_by_delivery(deployment, hook["id"])
        finally:
            code = brain.stop()
        warnings = brain.log_warnings()
    if code != 0:
        raise BenchFailure(f"the Brain exited with {code}")
    return _figures(runtime, senders, wall, cpu, runs, warnings)


def _runs_by_delivery(deployment: Deployment, webhook_id: str) -> dict[str, list[int]]:
    connection = deployment.connect_database()
    try:
        marker = "%s" if deployment.database_url else "?"
        cursor = connection.cursor()
        cursor.execute(
            f"SELECT delivery_id, id FROM triggers_runlog WHERE webhook_id = {marker}",
            [webhook_id],
        )
        rows = cursor.fetchall()
    finally:
        connection.close()
    found: dict[str, list[int]] = {}
    for delivery_id, pk in rows:
        found.setdefault(str(delivery_id), []).append(int(pk))
    return found


def _figures(
    runtime: str,
    senders: list[Sender],
    wall: float,
    cpu: float,
    runs: dict[str, list[int]],
    warnings: list[str],
) -> dict[str, Any]:
    latencies = sorted(x for sender in senders for x in sender.latencies)
    accepted = {k: v for sender in senders for k, v in sender.accepted.items()}
    problems = [e for sender in senders for e in sender.errors]
    problems += [m for sender in senders for m in sender.replay_mismatches]
    for msg_id, run_id in accepted.items():
        pks = runs.get(msg_id, [])
        if [f"run_{pk}" for pk in pks] != [run_id]:
            problems.append(f"{msg_id}: answered {run_id}, runs stored {pks}")
    # Timed deliveries only; the warm-up's runs are in the database too.
    return {
        "runtime": runtime,
        "accepted": len(latencies),
        "replays": sum(sender.replays for sender in senders),
        "per_second": len(latencies) / wall if wall else 0.0,
        "p50_ms": percentile(latencies, 50) * 1000 if latencies else 0.0,
        "p99_ms": percentile(latencies, 99) * 1000 if latencies else 0.0,
        "brain_cpu_per_delivery_ms": cpu / len(latencies) * 1000 if latencies else 0.0,
        "problems": problems,
        "warnings": warnings,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--senders", type=int, default=10, help="concurrent senders")
    parser.add_argument("--duration", type=float, default=30.0, help="timed seconds")
    parser.add_argument("--warmup", type=float, default=2.0, help="untimed seconds before")
    parser.add_argument(
        "--budget", type=float, default=BUDGET_PER_SECOND, help="accepted/s, embedded"
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when the budget is not met")
    parser.add_argument(
        "--py-spy",
        metavar="PATH",
        help="record the embedded Brain with py-spy during the timed part (.txt: raw collapsed "
        "stacks, .json: speedscope, else SVG)",
    )
    args = parser.parse_args()
    if args.senders < 1 or args.duration <= 0 or args.warmup < 0:
        parser.error("--senders must be >= 1, --duration > 0, --warmup >= 0")
    runtimes, skipped = available_runtimes("embedded", "postgres+redis")
    print(f"webhooks: {args.senders} senders × {args.duration:g} s, signed deliveries")
    print(f"python {platform.python_version()}, {platform.machine()}")
    results = []
    try:
        for runtime in runtimes:
            results.append(run_once(runtime, args))
    except BenchFailure as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    for note in skipped:
        print(note)
    print_table(
        ["runtime", "accepted", "replays", "accepted/s", "p50 ms", "p99 ms", "Brain CPU ms"],
        [
            [
                r["runtime"],
                r["accepted"],
                r["replays"],
                f"{r['per_second']:.1f}",
                f"{r['p50_ms']:.1f}",
                f"{r['p99_ms']:.1f}",
                f"{r['brain_cpu_per_delivery_ms']:.2f}",
            ]
            for r in results
        ],
    )
    ok = True
    for r in results:
        if r["problems"]:
            ok = False
            print(f"{r['runtime']}: {len(r['problems'])} problems, e.g. {r['problems'][:3]}")
        else:
            print(f"{r['runtime']}: every accepted delivery has exactly one run; no replay ran")
        print_log_warnings(r["warnings"])
    embedded = next((r for r in results if r["runtime"] == "embedded"), None)
    met = embedded is not None and embedded["per_second"] >= args.budget
    if embedded is not None:
        verdict = "met" if met else "NOT met"
        print(f"budget >= {args.budget:g} accepted/s embedded: {verdict}")
    if not ok:
        return 1
    return 0 if met or not args.strict else 1


if __name__ == "__main__":
    sys.exit(main())
