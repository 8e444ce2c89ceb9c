"""Memory search at scale: N document chunks (default 100,000) ingested through the real path,
then hybrid, lexical-only and dense-only searches timed.

Each runtime runs in a child process of its own (Django reads its settings once per process):
the embedded default (SQLite in a temporary VANCETOPE_VAR_DIR, the offline wordllama embedder,
the in-process embedding pool) and, when DATABASE_URL is set, PostgreSQL (a throwaway
database). Each child makes a tenant and a project, then ingests `--documents` documents of
`--sections` Markdown sections each with `vancetope.memory.documents.create_document` (one
section is one chunk: chunks never cross a heading), and waits until every chunk is embedded.
The text is generated from a fixed seed: sentences of words drawn by Zipf's law from English-like
ranks (the stop words first, then the other words of the retrieval corpus, tests/memory/corpus/,
then 20,000 rarer made-up words), so a query's common words match many chunks, as in real text.

Then `--queries` searches (after `--warmup` untimed ones), each of 3–6 words drawn the same
way but without stop words, in each mode, interleaved query by query: hybrid (lexical + dense,
fused), lexical only, dense only. A search is timed around
`vancetope.memory.search.search(reach, q, k=5)` (the function the REST view, the frame and the
tool call), results built. Every hybrid search must answer k results.

Budget: hybrid p50 <= 30 ms on the embedded default, <= 50 ms on PostgreSQL.

    .venv/bin/python bench/memory.py [--documents 1000] [--sections 100] [--queries 200]

See bench/README.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import (
    ROOT,
    BenchFailure,
    Deployment,
    HelpFormatter,
    available_runtimes,
    peak_rss_mb,
    percentile,
    print_table,
)

BUDGET_P50_MS = {"embedded": 30.0, "postgres": 50.0}
RARE_WORDS = 20_000
CORPUS = ROOT / "tests" / "memory" / "corpus"


def vocabulary(seed: int) -> tuple[list[str], int]:
    """English-like ranks: the stop words first (the commonest words of any English text), then
    the corpus's other words, then a long tail of rarer made-up words; and how many stop words."""
    from vancetope.memory.lexical import STOPWORDS

    corpus = {w for p in CORPUS.glob("*.md") for w in re.findall(r"[a-z]+", p.read_text().lower())}
    rng = random.Random(seed)
    stop = sorted(STOPWORDS)
    content = sorted(corpus - STOPWORDS)
    rng.shuffle(stop)
    rng.shuffle(content)
    syllables = ["ka", "lo", "mi", "ren", "tu", "vas", "zel", "po", "qui", "dor", "fen", "gar"]
    rare = sorted({"".join(rng.choice(syllables) for _ in range(4)) for _ in range(RARE_WORDS)})
    rng.shuffle(rare)
    return stop + content + rare, len(stop)


class Words:
    """Words drawn by Zipf's law (the word of rank r with weight 1/r)."""

    def __init__(self, seed: int) -> None:
        self.vocabulary, self.stop_count = vocabulary(seed)
        weights = [1 / (rank + 1) for rank in range(len(self.vocabulary))]
        self.cumulative = list(itertools.accumulate(weights))
        self.content = self.vocabulary[self.stop_count :]
        self.content_cumulative = list(itertools.accumulate(weights[self.stop_count :]))
        self.rng = random.Random(seed)

    def take(self, n: int) -> list[str]:
        return self.rng.choices(self.vocabulary, cum_weights=self.cumulative, k=n)

    def query(self) -> str:
        """3–6 words, none a stop word (a search box rarely gets them)."""
        n = self.rng.randint(3, 6)
        return " ".join(self.rng.choices(self.content, cum_weights=self.content_cumulative, k=n))

    def sentence(self) -> str:
        return " ".join(self.take(self.rng.randint(8, 16))).capitalize() + "."


# === child: one runtime ===========================================================================


def child_main(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "vancetope.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from vancetope.memory.documents import create_document
    from vancetope.memory.indexing import wait_for_embeddings
    from vancetope.memory.models import DocumentChunk, Passage
    from vancetope.memory.scopes import project_reach
    from vancetope.memory.search import Mode, search
    from vancetope.memory.vectors import get_store
    from vancetope.tenancy.models import Project, Tenant

    call_command("migrate", interactive=False, verbosity=0)
    tenant = Tenant.objects.create(slug="bench-memory", name="Bench tenant")
    project = Project.objects.create(tenant=tenant, slug="bench-memory", name="Bench project")
    words = Words(args.seed)

    contents = [
        "\n\n".join(
            f"## Section {s}\n\n{' '.join(words.sentence() for _ in range(3))}"
            for s in range(args.sections)
        )
        for _ in range(args.documents)
    ]
    start = time.perf_counter()
    for d, content in enumerate(contents):
        create_document(project, f"Document {d}", content, "text/markdown", None)
    stored = time.perf_counter() - start
    wait_for_embeddings()
    embedded_at = time.perf_counter() - start
    chunks = DocumentChunk.objects.count()
    vectors = Passage.objects.filter(vector__isnull=False).count()
    if chunks != args.documents * args.sections or vectors != chunks:
        raise BenchFailure(
            f"{chunks} chunks, {vectors} vectors; wanted {args.documents * args.sections}"
        )

    if connection.vendor == "postgresql":
        # What autovacuum does soon after a bulk load: it also empties the GIN index's pending
        # list of new rows, which every full-text query reads until then (the figures before
        # it are in the README).
        with connection.cursor() as cursor:
            cursor.execute("VACUUM (ANALYZE) memory_passage")
    reach = project_reach(project)
    queries = [words.query() for _ in range(args.warmup + args.queries)]
    timings: dict[str, list[float]] = {mode.value: [] for mode in Mode}
    for i, query in enumerate(queries):
        for mode in Mode:
            begin = time.perf_counter()
            results = search(reach, query, 5, mode=mode)
            elapsed = time.perf_counter() - begin
            if mode == Mode.HYBRID and len(results) != 5:
                raise BenchFailure(f"hybrid search {query!r} answered {len(results)} results")
            if i >= args.warmup:
                timings[mode.value].append(elapsed)
    result = {
        "runtime": args.runtime,
        "database": connection.vendor,
        "store": get_store().name,
        "chunks": chunks,
        "stored_per_s": chunks / stored,
        "embedded_per_s": chunks / embedded_at,
        "rss_peak_mb": peak_rss_mb(),
        **{
            f"{mode}_{q}": percentile(samples, q) * 1000
            for mode, samples in timings.items()
            for q in (50, 99)
        },
    }
    Path(args.result_file).write_text(json.dumps(result))


# === parent =======================================================================================


def run_child(runtime: str, args: argparse.Namespace) -> dict[str, Any]:
    with Deployment(runtime, "memory") as deployment, tempfile.TemporaryDirectory() as scratch:
        result_file = Path(scratch) / "result.json"
        command = [
            sys.executable, str(Path(__file__).resolve()), "--child", "--runtime", runtime,
            "--documents", str(args.documents), "--sections", str(args.sections),
            "--queries", str(args.queries), "--warmup", str(args.warmup),
            "--seed", str(args.seed), "--result-file", str(result_file),
        ]  # fmt: skip
        print(f"  running {runtime} …", file=sys.stderr, flush=True)
        env = {**deployment.env, "PYTHONPATH": str(ROOT), "LOG_LEVEL": "INFO"}
        done = subprocess.run(
            command, env=env, cwd=ROOT, capture_output=True, text=True, check=False
        )
        store_lines = [line for line in done.stderr.splitlines() if "vectors are kept" in line]
        if done.returncode != 0 or not result_file.exists():
            tail = (done.stderr or done.stdout or "(no output)").strip().splitlines()[-12:]
            print("\n".join(f"    {line}" for line in tail), file=sys.stderr)
            return {"runtime": runtime, "error": f"exit {done.returncode}"}
        result: dict[str, Any] = json.loads(result_file.read_text())
        result["store_log"] = store_lines[0].split(": ", 1)[-1] if store_lines else ""
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--sections", type=int, default=100, help="chunks per document")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument(
        "--runtimes", default="embedded,postgres", help="which to run (postgres needs DATABASE_URL)"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--runtime", default="embedded", help=argparse.SUPPRESS)
    parser.add_argument("--result-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args)
        return
    runtimes, skipped = available_runtimes(*args.runtimes.split(","))
    results = [run_child(runtime, args) for runtime in runtimes]
    print()
    print(
        f"memory search: {args.documents * args.sections:,} chunks, {args.queries} timed "
        f"queries per mode after {args.warmup} warm-up, k=5; python "
        f"{platform.python_version()}, {os.cpu_count()} CPUs"
    )
    rows = []
    failed = False
    for r in results:
        if "error" in r:
            rows.append([r["runtime"], "FAILED", r["error"], *[""] * 9])
            failed = True
            continue
        budget = BUDGET_P50_MS[r["runtime"]]
        met = "met" if r["hybrid_50"] <= budget else "NOT met"
        rows.append([
            r["runtime"], r["store"], f"{r['stored_per_s']:.0f}", f"{r['embedded_per_s']:.0f}",
            f"{r['hybrid_50']:.1f}", f"{r['hybrid_99']:.1f}", f"{budget:.0f} {met}",
            f"{r['lexical_50'] / r['hybrid_50']:.2f}", f"{r['dense_50'] / r['hybrid_50']:.2f}",
            f"{r['lexical_50']:.1f}/{r['lexical_99']:.1f}",
            f"{r['dense_50']:.1f}/{r['dense_99']:.1f}",
            f"{r['rss_peak_mb']:.0f}",
        ])  # fmt: skip
    print_table(
        [
            "runtime", "vector store", "stored/s", "embedded/s", "hybrid p50 ms",
            "hybrid p99 ms", "p50 budget", "lexical/hybrid p50", "dense/hybrid p50",
            "lexical p50/p99", "dense p50/p99", "peak RSS MB",
        ],
        rows,
    )  # fmt: skip
    for note in skipped:
        print(note)
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
