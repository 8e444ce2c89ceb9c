"""A chat that lives long: 1,000 turns of the default chat on the scripted provider, with the
context budget, compaction and recall on, beside the same chat sent whole and the same chat
with recall off.

Each variant runs in a child process of its own (Django reads settings once per process) on
the embedded default (SQLite in a temporary VANCETOPE_VAR_DIR, the in-process worker), through
the service path of `turn_overhead.py` (`send_chat`, then a poll for the stored reply). The
variants take turns, `--chunk` turns each (the order rotating), so a change of the machine's
load meets them alike:

| variant | window | recall |
| --- | --- | --- |
| `whole` | unknown (every call sends the whole history, as before the context budget) | - |
| `compacted` | `--window` tokens (`VANCETOPE_LLM_CONTEXT_WINDOW`) | on |
| `no-recall` | `--window` tokens | off (the setting `llm.recall`) |

Fifty facts are planted in the first nine tenths of the chat ("the code of locker K is
WORD-K"), and the last fifty turns ask for them one by one ("what is the code of locker K?").
A wrapper around the provider keeps what each answer's call sent: its tokens (the assembly's
count, vancetope/llm/assembly.py) and, for a question, whether the fact asked for is in it.

Printed, against the budgets of issue "Long-lived for real":
- the prompt tokens of the calls per hundred turns (mean and max) beside the whole history's
  tokens: flat, within the call's budget, while the history grows;
- each variant's turn p50 and p99: `compacted` within 5 % of `whole` (the default chat's turn);
- the facts found in what the question's call sent: >= 95 % of 50 with recall, beside the
  same run with recall off.

    .venv/bin/python bench/long_chat.py [--turns 1000] [--window 8192] [--chunk 50] [--strict]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import HelpFormatter, percentile, print_table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ("whole", "compacted", "no-recall")
FACTS = 50
WORDS = (
    "amber",
    "basil",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "gamma",
    "heron",
    "indigo",
    "juniper",
)
# Budgets of the issue.
P50_WITHIN = 0.05
RECALL_AT_LEAST = 0.95


def fact_turns(turns: int) -> dict[int, int]:
    """Turn → fact number: the facts spread over the first nine tenths of the chat."""
    span = max(FACTS, int(turns * 0.9) - FACTS)
    return {1 + (k * span) // FACTS: k for k in range(FACTS)}


def code_of(k: int) -> str:
    return f"{WORDS[k % len(WORDS)]}-{k}"


def turn_text(turn: int, turns: int, planted: dict[int, int]) -> tuple[str, str]:
    """(what the person says, the code the call must carry: "" when it is not a question)."""
    first_question = turns - FACTS
    if turn > first_question:
        k = turn - first_question - 1
        return f"What is the code of locker {k}?", code_of(k)
    if turn in planted:
        k = planted[turn]
        return f"Note this: the code of locker {k} is {code_of(k)}.", ""
    return f"Turn {turn}: some small talk about the weather and the trains, nothing more.", ""


# === child: one variant ===========================================================================


def child_main(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vancetope.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from turn_overhead import _make_tenancy

    from processes.lane import context_builder
    from processes.lane.worker import shutdown_worker
    from vancetope.config import services
    from vancetope.config.models import Scope
    from vancetope.config.registry import get_key

    call_command("migrate", interactive=False, verbosity=0)
    user, project, _ = _make_tenancy()
    if args.variant == "no-recall":
        chain = services.chain_of(Scope.TENANT, project.tenant_id)
        services.do_set(
            get_key("llm.recall"), Scope.TENANT, project.tenant_id, chain.tenant_id, False
        )
    recorder = Recorder(context_builder.get_provider)
    context_builder.get_provider = recorder.provider  # type: ignore[assignment]
    try:
        chat = Chat(user, project, recorder, args)
        # The parent says how many turns to run next ("50"), or "end"; the child answers
        # "ready" once, then "ok" after each chunk, when its lane is at rest (a compaction the
        # last turn began is over, so it does not run in another variant's chunk).
        print("ready", flush=True)
        for line in sys.stdin:
            if line.strip() == "end":
                break
            chat.run(int(line))
            print("ok", flush=True)
        result = chat.result()
    finally:
        shutdown_worker(wait=True)
    Path(args.result_file).write_text(json.dumps(result))


class Recorder:
    """Wraps the provider the lane builds: keeps the messages of the last answer's call."""

    def __init__(self, build: Any) -> None:
        self._build = build
        self.last: list[Any] = []

    def provider(self, config: Any = None) -> Any:
        from vancetope.llm.base import LlmProvider

        real = self._build(config)
        recorder = self

        class Recording(LlmProvider):
            name, model, max_tokens = real.name, real.model, real.max_tokens

            def context_window(self, model: str = "") -> int | None:
                return real.context_window(model)

            def count_tokens(self, text: str) -> int | None:
                return real.count_tokens(text)

            def stream(self, messages: Any, tools: Any = None, info: Any = None, **kw: Any) -> Any:
                if info is not None and info.step == "chat":
                    recorder.last = list(messages)
                return real.stream(messages, tools, info, **kw)

        return Recording()


def send_chat(session_id: int, text: str, *, user: Any) -> None:
    from processes.actions import steer

    steer.send_chat(session_id, text, user=user)


class Chat:
    """One variant's chat, run a chunk of turns at a time (`run`), through the service path of
    `turn_overhead.py`: `send_chat`, then a poll for the stored reply."""

    def __init__(self, user: Any, project: Any, recorder: Recorder, args: argparse.Namespace):
        from processes.actions.sessions import create_session
        from sessions_app.services import FingerprintData
        from vancetope.llm.tokens import Tokens

        self.user, self.recorder, self.args = user, recorder, args
        self.session = create_session(
            user,
            client_type="cli",
            project_id=project.public_id,
            fingerprint=FingerprintData(machine_id="bench-machine", working_dir=str(ROOT)),
        )
        assert self.session.chat_process_id is not None
        self.process_id: int = self.session.chat_process_id
        self.tokens = Tokens()
        self.planted = fact_turns(args.turns)
        self.samples: list[float] = []
        self.sent_tokens: list[int] = []
        self.history_tokens: list[int] = []
        self.budgets: list[int | None] = []
        self.found = 0
        self.history = 0
        self.index = 1
        self.turn = 0

    def run(self, count: int) -> None:
        from processes.models import ConversationMessage, ThinkProcess
        from processes.states import Status
        from vancetope.llm.base import LlmMessage

        for _ in range(count):
            self.turn += 1
            text, code = turn_text(self.turn, self.args.turns, self.planted)
            start = time.perf_counter()
            send_chat(self.session.pk, text, user=self.user)
            deadline = start + self.args.turn_timeout
            while not ConversationMessage.objects.filter(
                process_id=self.process_id,
                index=self.index,
                role="assistant",
                process__status=Status.IDLE,
            ).exists():
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"turn {self.turn}: no reply in {self.args.turn_timeout}s")
                time.sleep(0.002)
            self.samples.append(time.perf_counter() - start)
            self.index += 2
            sent = self.recorder.last
            self.sent_tokens.append(self.tokens.messages(sent))
            rows = ThinkProcess.objects.values_list("last_call", flat=True)
            last_call = rows.get(pk=self.process_id)
            self.budgets.append(last_call["budget"] if last_call else None)
            said = [LlmMessage(role="user", content=text), LlmMessage("assistant", f"echo: {text}")]
            self.history += self.tokens.messages(said)
            self.history_tokens.append(self.history)
            if code and any(code in message.content for message in sent):
                self.found += 1
        at_rest = ThinkProcess.objects.filter(pk=self.process_id, lease_owner="")
        while not at_rest.exists():
            time.sleep(0.002)

    def result(self) -> dict[str, Any]:
        from processes.models import Compaction

        return {
            "variant": self.args.variant,
            "samples": self.samples,
            "sent": self.sent_tokens,
            "budgets": self.budgets,
            "history": self.history_tokens,
            "found": self.found,
            "compactions": Compaction.objects.filter(process_id=self.process_id).count(),
        }


# === parent =======================================================================================


class Child:
    """A variant's child process, driven a chunk of turns at a time over its stdin."""

    def __init__(self, variant: str, args: argparse.Namespace, scratch: Path) -> None:
        self.variant = variant
        self.result_file = scratch / f"{variant}.json"
        var_dir = scratch / variant
        var_dir.mkdir()
        env = {
            **{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")},
            "VANCETOPE_VAR_DIR": str(var_dir),
            "VANCETOPE_LLM": "scripted",
            "VANCETOPE_LLM_CONTEXT_WINDOW": "0" if variant == "whole" else str(args.window),
            "VANCETOPE_RATE_CHAT": "100000/10 seconds",
            "DEBUG": "0",
            "LOG_LEVEL": "WARNING",
            "PYTHONPATH": str(ROOT),
        }
        command = [
            sys.executable, __file__, "--child", "--variant", variant, "--turns", str(args.turns),
            "--window", str(args.window), "--turn-timeout", str(args.turn_timeout),
            "--result-file", str(self.result_file),
        ]  # fmt: skip
        self.log = (scratch / f"{variant}.log").open("w+")
        self.process = subprocess.Popen(
            command, env=env, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.log, text=True,
        )  # fmt: skip
        self.expect("ready")

    def expect(self, word: str) -> None:
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if line != word:
            self.log.seek(0)
            tail = self.log.read().strip().splitlines()[-12:]
            raise RuntimeError(f"{self.variant} failed:\n" + "\n".join(tail))

    def run(self, turns: int) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{turns}\n")
        self.process.stdin.flush()
        self.expect("ok")

    def finish(self) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write("end\n")
        self.process.stdin.close()
        self.process.wait(timeout=120)
        result: dict[str, Any] = json.loads(self.result_file.read_text())
        return result


def run_interleaved(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Every variant's chat, run a chunk at a time in turn (the order rotating), so a change
    of the machine's load meets every variant alike: their p50s are compared within one run."""
    with tempfile.TemporaryDirectory() as scratch:
        print(f"  starting {', '.join(VARIANTS)} …", file=sys.stderr, flush=True)
        children = [Child(variant, args, Path(scratch)) for variant in VARIANTS]
        done = 0
        while done < args.turns:
            count = min(args.chunk, args.turns - done)
            shift = (done // args.chunk) % len(children)
            for child in children[shift:] + children[:shift]:
                child.run(count)
            done += count
            print(f"  {done} turns", file=sys.stderr, flush=True)
        return {child.variant: child.finish() for child in children}


def parent_main(args: argparse.Namespace) -> int:
    from vancetope.llm.assembly import budget_for
    from vancetope.llm.tokens import Tokens

    results = run_interleaved(args)
    budget = budget_for(args.window, 4096, None, Tokens()).prompt
    print(
        f"\nlong chat: {args.turns} turns of the default chat (arthur), scripted provider, "
        f"embedded; window {args.window} tokens (prompt budget {budget} without tools, "
        "estimated; each call's own budget leaves room for the tools it offers), "
        f"{FACTS} facts planted and asked for in the last {FACTS} turns\n"
    )
    rows = []
    step = max(1, args.turns // 10)
    for start in range(0, args.turns, step):
        chunk = slice(start, start + step)
        row = [f"{start + 1}-{min(start + step, args.turns)}"]
        for variant in VARIANTS:
            sent = results[variant]["sent"][chunk]
            row.append(f"{sum(sent) / len(sent):.0f} / {max(sent)}")
        row.append(str(results["whole"]["history"][chunk][-1]))
        rows.append(row)
    print("prompt tokens per call (mean / max) per tenth of the chat, and the history's tokens:")
    print_table(["turns", *VARIANTS, "history"], rows)
    failures = []
    for variant in ("compacted", "no-recall"):
        over = [
            (turn, sent, limit)
            for turn, (sent, limit) in enumerate(
                zip(results[variant]["sent"], results[variant]["budgets"], strict=True), start=1
            )
            if limit is None or sent > limit
        ]
        if over:
            failures.append(f"{variant}: {len(over)} calls over their budget, first {over[0]}")
    print()
    timing = []
    p50 = {v: percentile(results[v]["samples"], 50) * 1000 for v in VARIANTS}
    for variant in VARIANTS:
        samples = results[variant]["samples"]
        timing.append(
            [
                variant,
                f"{p50[variant]:.2f}",
                f"{percentile(samples, 99) * 1000:.2f}",
                f"{p50[variant] / p50['whole']:.3f}",
                str(results[variant]["compactions"]),
                f"{results[variant]['found']} / {FACTS}",
            ]
        )
    print_table(["variant", "p50 ms", "p99 ms", "p50 / whole", "compactions", "facts sent"], timing)
    ratio = paired_ratio(results["compacted"]["samples"], results["whole"]["samples"], args.chunk)
    print(
        f"\nbudget: compacted turn p50 within {P50_WITHIN:.0%} of whole: {ratio - 1:+.1%} "
        f"(the median over the {args.turns // args.chunk} chunks of the ratio of their p50s, "
        f"each pair run back to back; the whole run's p50s: "
        f"{p50['compacted'] / p50['whole'] - 1:+.1%})"
    )
    if ratio > 1 + P50_WITHIN:
        failures.append(f"compacted p50 is {ratio - 1:+.1%} of whole's")
    share = results["compacted"]["found"] / FACTS
    print(f"budget: facts in what is sent with recall >= {RECALL_AT_LEAST:.0%}: {share:.0%}")
    if share < RECALL_AT_LEAST:
        failures.append(f"recall found {share:.0%} of the facts")
    for failure in failures:
        print(f"BUDGET MISSED: {failure}")
    return 1 if failures and args.strict else 0


def paired_ratio(samples: list[float], baseline: list[float], chunk: int) -> float:
    """The median, over the chunks the variants ran in turn, of a chunk's p50 over the same
    chunk's p50 of the baseline: each pair ran back to back, so a change of the machine's load
    between chunks cancels out of the ratio."""
    ratios = [
        percentile(samples[start : start + chunk], 50)
        / percentile(baseline[start : start + chunk], 50)
        for start in range(0, len(samples), chunk)
    ]
    return percentile(ratios, 50)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--window", type=int, default=8192, help="the model's window, tokens")
    parser.add_argument("--turn-timeout", type=float, default=30.0)
    parser.add_argument(
        "--chunk", type=int, default=50, help="turns each variant runs before the next one's"
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a budget is missed")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--result-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args)
        return 0
    return parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
