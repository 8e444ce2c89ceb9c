"""A separate OS process that steers one think process many times (concurrency tests).

Runs with the in-process worker, so every sender also drives lanes: the lease decides which
OS process runs each turn. Exits once the target process has nothing pending any more.

    python -m tests.support.steer_sender --process-id 12 --prefix w3 --count 125
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import django


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--process-id", type=int, required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vancetope.settings")
    os.environ["VANCETOPE_WORKER"] = "inprocess"
    django.setup()
    from processes.actions.steer import steer_process
    from processes.lane.worker import shutdown_worker
    from processes.models import PendingMessage

    started = time.monotonic()
    for index in range(args.count):
        steer_process(args.process_id, f"{args.prefix}-{index}")
    sent = time.monotonic() - started
    deadline = time.monotonic() + args.timeout
    pending = PendingMessage.objects.filter(process_id=args.process_id, consumed=False)
    while pending.exists():
        if time.monotonic() > deadline:
            print(f"{args.prefix}: still {pending.count()} pending after {args.timeout}s")
            return 1
        time.sleep(0.05)
    shutdown_worker(wait=True)
    drained = time.monotonic() - started
    print(f"{args.prefix}: sent {args.count} in {sent:.2f}s, drained after {drained:.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
