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

Before that, the small corpus: the Markdown files of tests/memory/corpus/ as documents of a
tenant of their own, searched over REST (`GET /api/memory/search` through Django's handler, in
process, with an API token), `--queries` times.

Where the time of a hybrid search goes is printed per phase (query embedding, full-text, vector
scan, the visibility filter of the dense candidates, fusion, the result rows and their
serialisation), from a second pass over the same queries with each phase's function timed.
The peer (search/floor.py of the peers' folder, VANCETOPE_BENCH_PEERS or --peers: SQLite FTS5 +
an exact numpy scan + fusion over as many chunks, in process) runs in the same run.

Budgets: REST p50 <= 20 ms on the small corpus; hybrid p50 within 2x of the floor's fused p50
(and <= 30 ms on the embedded default, <= 50 ms on PostgreSQL).

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
import statistics
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
from peers import (
    PEERS_VARIABLE,
    SEARCH_FLOOR,
    SearchFloor,
    load_average,
    missing_reason,
    peers_dir,
    search_floor,
)

BUDGET_P50_MS = {"embedded": 30.0, "postgres": 50.0}
BUDGET_REST_P50_MS = 20.0
BUDGET_FLOOR_RATIO = 2.0
PHASES = (
    "query embedding",
    "full-text",
    "vector scan",
    "dense visibility",
    "fusion",
    "rows + serialisation",
)
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


class PhaseTimer:
    """Wraps functions so that each call's wall time is added to its phase."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        self.other: dict[str, float] = {"dense": 0.0, "hits": 0.0, "search": 0.0}
        self.wrapped: list[tuple[Any, str, Any]] = []

    def wrap(self, owner: Any, name: str, phase: str) -> None:
        original = getattr(owner, name)
        into = self.seconds if phase in self.seconds else self.other

        def timed(*args: Any, **kwargs: Any) -> Any:
            begin = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                into[phase] += time.perf_counter() - begin

        self.wrapped.append((owner, name, original))
        setattr(owner, name, timed)

    def restore(self) -> None:
        for owner, name, original in reversed(self.wrapped):
            setattr(owner, name, original)

    def per_search_ms(self, searches: int) -> dict[str, float]:
        """ms per search by phase; the visibility filter and the rows are what is left of the
        dense ranking and of the whole search."""
        found = {phase: seconds * 1000 / searches for phase, seconds in self.seconds.items()}
        other = {phase: seconds * 1000 / searches for phase, seconds in self.other.items()}
        found["dense visibility"] = other["dense"] - found["query embedding"] - found["vector scan"]
        found["rows + serialisation"] = other["search"] - other["hits"]
        found["total"] = other["search"]
        return found


def time_phases(reach: Any, queries: list[str]) -> dict[str, float]:
    """A second pass of hybrid searches over `queries` with each phase timed."""
    from vancetope.memory import search as search_module
    from vancetope.memory.embeddings import get_embedder
    from vancetope.memory.vectors import get_store

    timer = PhaseTimer()
    embedder = get_embedder()
    if embedder is not None:
        timer.wrap(embedder, "embed", "query embedding")
    timer.wrap(get_store(), "nearest", "vector scan")
    timer.wrap(search_module, "lexical_ids", "full-text")
    timer.wrap(search_module, "fuse", "fusion")
    timer.wrap(search_module, "dense_ids", "dense")
    timer.wrap(search_module, "search_hits", "hits")
    timer.wrap(search_module, "search", "search")
    try:
        for query in queries:
            search_module.search(reach, query, 5)
    finally:
        timer.restore()
    return timer.per_search_ms(len(queries))


def rest_small_corpus(args: argparse.Namespace) -> dict[str, Any]:
    """The corpus's documents in a tenant of their own, searched over REST: p50, p99, and
    where a hybrid search's time goes."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from vancetope.memory.documents import create_document
    from vancetope.memory.indexing import wait_for_embeddings
    from vancetope.memory.scopes import project_reach
    from vancetope.tenancy.models import (
        ApiToken,
        Project,
        ProjectMembership,
        Role,
        Tenant,
        TenantMembership,
    )

    tenant = Tenant.objects.create(slug="bench-small", name="Small corpus")
    project = Project.objects.create(tenant=tenant, slug="bench-small", name="Small corpus")
    user = get_user_model().objects.create_user("bench-reader", password="bench-pw")
    TenantMembership.objects.create(user=user, tenant=tenant, role=Role.ADMIN)
    ProjectMembership.objects.create(user=user, project=project)
    _, token = ApiToken.issue(user, name="bench")
    files = sorted(CORPUS.glob("*.md"))
    for path in files:
        create_document(project, path.stem, path.read_text(), "text/markdown", None)
    wait_for_embeddings()
    rng = random.Random(args.seed)
    words = sorted(
        {w for path in files for w in re.findall(r"[a-z]{4,}", path.read_text().lower())}
    )
    queries = [" ".join(rng.sample(words, rng.randint(2, 4))) for _ in range(args.queries)]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    samples = []
    for i, query in enumerate([*queries[: args.warmup], *queries]):
        begin = time.perf_counter()
        answer = client.get("/api/memory/search", {"q": query})
        elapsed = time.perf_counter() - begin
        if answer.status_code != 200:
            raise BenchFailure(f"GET /api/memory/search {query!r}: {answer.status_code}")
        if i >= args.warmup:
            samples.append(elapsed)
    return {
        "documents": len(files),
        "rest_50": percentile(samples, 50) * 1000,
        "rest_99": percentile(samples, 99) * 1000,
        "phases": time_phases(project_reach(project), queries),
    }


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
    small = rest_small_corpus(args)
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
    chunks = DocumentChunk.objects.filter(document__project=project).count()
    vectors = Passage.objects.filter(project=project, vector__isnull=False).count()
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
    phases = time_phases(reach, queries[args.warmup :])
    result = {
        "small": small,
        "phases": phases,
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
    parser.add_argument(
        "--peers",
        default=os.environ.get(PEERS_VARIABLE, ""),
        help=f"the peers' folder (search/floor.py; default ${PEERS_VARIABLE})",
    )
    parser.add_argument("--no-peer", action="store_true", help="leave the floor out")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a budget is not met")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--runtime", default="embedded", help=argparse.SUPPRESS)
    parser.add_argument("--result-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args)
        return
    runtimes, skipped = available_runtimes(*args.runtimes.split(","))
    chunks = args.documents * args.sections
    peers = peers_dir(args.peers)
    reason = "--no-peer" if args.no_peer else missing_reason(peers, SEARCH_FLOOR)
    floors: list[SearchFloor] = []
    if reason is None and peers is not None:
        print(f"  running the search floor over {chunks:,} chunks …", file=sys.stderr)
        floors.append(search_floor(peers, chunks, args.queries))
    results = [run_child(runtime, args) for runtime in runtimes]
    if floors and peers is not None:
        floors.append(search_floor(peers, chunks, args.queries))
    floor = statistics.fmean(f.fused_p50_ms for f in floors) if floors else None
    print()
    print(
        f"memory search: {chunks:,} chunks, {args.queries} timed queries per mode after "
        f"{args.warmup} warm-up, k=5; python {platform.python_version()}, {load_average()}"
    )
    for when, found in zip(("before", "after"), floors, strict=False):
        print(f"floor (peer, {when} the Brain's runs): {found.output}")
    if floor is None:
        print(f"floor: left out ({reason})")
    rows = []
    failed = False
    met = True
    for r in results:
        if "error" in r:
            rows.append([r["runtime"], "FAILED", r["error"], *[""] * 8])
            failed = True
            continue
        budget = BUDGET_P50_MS[r["runtime"]]
        within = r["hybrid_50"] <= budget
        ratio = r["hybrid_50"] / floor if floor else None
        if ratio is not None:
            within = within and ratio <= BUDGET_FLOOR_RATIO
        met = met and within
        rows.append([
            r["runtime"], r["store"], f"{r['stored_per_s']:.0f}", f"{r['embedded_per_s']:.0f}",
            f"{r['hybrid_50']:.1f}", f"{r['hybrid_99']:.1f}",
            f"{ratio:.2f}" if ratio is not None else "-",
            f"{budget:.0f}, 2x floor: {'met' if within else 'NOT met'}",
            f"{r['lexical_50']:.1f}/{r['lexical_99']:.1f}",
            f"{r['dense_50']:.1f}/{r['dense_99']:.1f}",
            f"{r['rss_peak_mb']:.0f}",
        ])  # fmt: skip
    print_table(
        [
            "runtime", "vector store", "stored/s", "embedded/s", "hybrid p50 ms",
            "hybrid p99 ms", "x floor", "p50 budget", "lexical p50/p99", "dense p50/p99",
            "peak RSS MB",
        ],
        rows,
    )  # fmt: skip
    print()
    print("the small corpus (tests/memory/corpus/, a tenant of its own) over REST:")
    small_rows = []
    for r in results:
        if "error" in r:
            continue
        small = r["small"]
        ok = small["rest_50"] <= BUDGET_REST_P50_MS
        met = met and ok
        small_rows.append([
            r["runtime"], small["documents"], f"{small['rest_50']:.1f}",
            f"{small['rest_99']:.1f}",
            f"{BUDGET_REST_P50_MS:g} {'met' if ok else 'NOT met'}",
        ])  # fmt: skip
    print_table(["runtime", "documents", "REST p50 ms", "REST p99 ms", "p50 budget"], small_rows)
    print()
    print("where a hybrid search's time goes (ms per search, a second pass of the same queries):")
    phase_rows = []
    for r in results:
        if "error" in r:
            continue
        for corpus, phases in (("small", r["small"]["phases"]), (f"{chunks:,}", r["phases"])):
            phase_rows.append(
                [r["runtime"], corpus, *(f"{phases[p]:.2f}" for p in (*PHASES, "total"))]
            )
    print_table(["runtime", "chunks", *PHASES, "total"], phase_rows)
    for note in skipped:
        print(note)
    if failed or (args.strict and not met):
        sys.exit(1)


if __name__ == "__main__":
    main()
