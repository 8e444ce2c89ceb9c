"""Instructions per chat turn: what one turn costs the CPU, counted, not timed.

On a shared machine the same code's p50 moves by a third from run to run (docs/performance.md),
so a change of a few percent cannot be seen in `turn_overhead.py`'s times. This counts the
instructions a turn executes instead, with valgrind's callgrind (which runs the program on a
synthetic CPU: the count does not depend on the machine's load or speed). It runs
`turn_overhead.py`'s child for one row twice under valgrind, once with 1 timed turn and once
with 1 + N, and prints (second count - first count) / N: the instructions of one turn of the
websocket path on the embedded runtime (the consumer, the service call, the lane, the events,
and the in-process client that sends the chat and reads the reply), the setup cancelled out.

Each count takes minutes (the child's setup alone is some 18 billion instructions, about 50x
slower than running it); the two runs of a row go side by side. With `--checkout DIR` (given
twice or more) the rows of each checkout are counted with that checkout's code and printed
with their ratio to the first: how to tell whether a change made a turn cheaper.

Needs valgrind (`apt-get install valgrind`). Not a budget: the budgets are the times of
`turn_overhead.py` and `parallel_sessions.py`, beside their peer.

    .venv/bin/python bench/turn_instructions.py [--turns 200] [--chat default]
    .venv/bin/python bench/turn_instructions.py --checkout /tmp/before --checkout .

See bench/README.md.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from common import BenchFailure, Deployment, HelpFormatter, print_table
from turn_overhead import CHATS, ROOT, _run_child

COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def count(root: Path, chat: str, turns: int, args: argparse.Namespace) -> int:
    """Instructions of one child run of `turns` timed turns (after the warm-up), at `root`."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise BenchFailure("valgrind is not installed (apt-get install valgrind)")
    deployment = Deployment("embedded", f"instr_{chat}_{turns}", worker="inprocess")
    with deployment, tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "valgrind.log"
        wrapper = [
            valgrind,
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            f"--log-file={log}",
        ]
        child_args = argparse.Namespace(
            turns=turns,
            warmup=args.warmup,
            turn_timeout=args.turn_timeout,
            poll_ms=2.0,
            profile=None,
            stages=False,
            child_timeout=args.child_timeout,
        )
        result = _run_child(
            "embedded", chat, "websocket", child_args, deployment, Path(scratch),
            root=root, wrapper=wrapper,
        )  # fmt: skip
        if "error" in result:
            raise BenchFailure(f"{root} {chat} ({turns} turns): {result['error']}")
        found = COLLECTED.search(log.read_text())
        if found is None:
            raise BenchFailure(f"{root} {chat}: valgrind reported no count ({log})")
        return int(found[1])


def per_turn(root: Path, chat: str, args: argparse.Namespace) -> float:
    """Instructions of one turn: two runs side by side, 1 and 1 + N timed turns."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        short = pool.submit(count, root, chat, 1, args)
        long = pool.submit(count, root, chat, 1 + args.turns, args)
        return (long.result() - short.result()) / args.turns


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--turns", type=int, default=200, help="the turns counted (N)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed turns before them")
    parser.add_argument("--chat", choices=CHATS, action="append", help="default: the default chat")
    parser.add_argument(
        "--checkout",
        action="append",
        type=Path,
        help="a checkout whose code to count (repeat to compare; default: this one)",
    )
    parser.add_argument(
        "--turn-timeout", type=float, default=300.0, help="seconds one turn may take"
    )
    parser.add_argument(
        "--child-timeout", type=float, default=3600.0, help="seconds one child run may take"
    )
    args = parser.parse_args()
    if args.turns < 1 or args.warmup < 0:
        parser.error("--turns must be >= 1 and --warmup >= 0")
    checkouts = [path.resolve() for path in args.checkout or [ROOT]]
    for path in checkouts:
        if not (path / "bench" / "turn_overhead.py").is_file():
            parser.error(f"{path} is not a checkout (no bench/turn_overhead.py)")
    chats = args.chat or ["default"]
    rows = []
    try:
        for chat in chats:
            first = None
            for path in checkouts:
                print(f"  counting {path} {chat} …", file=sys.stderr, flush=True)
                instructions = per_turn(path, chat, args)
                first = first or instructions
                rows.append(
                    [str(path), chat, f"{instructions / 1e6:.2f}", f"{instructions / first:.3f}"]
                )
    except BenchFailure as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    print(
        f"\ninstructions per chat turn (valgrind callgrind), websocket path, embedded: "
        f"({args.turns + 1} turns - 1 turn) / {args.turns}, after {args.warmup} warm-up turns"
    )
    print_table(["checkout", "chat", "M instr/turn", "x first"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
