"""The peers a bench measures beside the Brain in the same run, from a folder outside the project.

The folder is named by VANCETOPE_BENCH_PEERS (or a bench's `--peers DIR`); without it a bench
prints its own figures and says why the peer's column is empty. The peers run in a venv of their
own that is made once, outside the checkout (the project's source scans walk the checkout), in
the temporary directory: `vt-bench-peers/langgraph` with `langgraph langgraph-checkpoint-sqlite`
and numpy. None of the peers' code is part of the project: their scripts run from where they are.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

PEERS_VARIABLE = "VANCETOPE_BENCH_PEERS"
PEER_VENV = Path(tempfile.gettempdir()) / "vt-bench-peers" / "langgraph"
PEER_PACKAGES = ("langgraph", "langgraph-checkpoint-sqlite", "numpy")


def peers_dir(given: str | None = None) -> Path | None:
    """The peers' folder (`given`, else $VANCETOPE_BENCH_PEERS), or None when unset."""
    found = given or os.environ.get(PEERS_VARIABLE, "")
    return Path(found) if found else None


def missing_reason(peers: Path | None, script: str) -> str | None:
    """Why the peer `script` cannot run (None: it can)."""
    if peers is None:
        return f"no peer: {PEERS_VARIABLE} (or --peers DIR) names no peers folder"
    if not (peers / script).exists():
        return f"no peer: {peers / script} not found"
    return None


def peer_python() -> Path:
    """The peers' venv's python, made once (pip install of PEER_PACKAGES)."""
    python = PEER_VENV / "bin" / "python"
    if not python.exists():
        print(f"peers: making their venv in {PEER_VENV} (once)", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PEER_PACKAGES], check=True)
    return python


def run_peer(peers: Path, script: str, *arguments: object, timeout: float = 600.0) -> str:
    """The peer script's output (run from its own folder, so it imports its neighbours)."""
    path = peers / script
    done = subprocess.run(
        [str(peer_python()), str(path), *map(str, arguments)],
        cwd=path.parent,
        check=True,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return done.stdout


@dataclass(frozen=True)
class LangGraphTurns:
    """LangGraph in-process with its SQLite checkpointer: one echo chat turn per call."""

    p50_ms: float
    p99_ms: float
    turns_per_second: float
    bytes_per_turn: float
    output: str


LANGGRAPH_TURNS = "langgraph/bench_inproc.py"


def langgraph_turns(peers: Path, turns: int) -> LangGraphTurns:
    out = run_peer(peers, LANGGRAPH_TURNS, turns)
    timing = re.search(
        r"SqliteSaver \(file\): \d+ turns p50 ([\d.]+) ms p99 ([\d.]+) ms -> (\d+) turns/s", out
    )
    size = re.search(r"SqliteSaver \(file\): .*\(([\d.]+) kB per turn\)", out)
    if timing is None or size is None:
        raise RuntimeError(f"{LANGGRAPH_TURNS}: unexpected output {out!r}")
    return LangGraphTurns(
        float(timing[1]), float(timing[2]), float(timing[3]), float(size[1]) * 1000, out.strip()
    )


LANGGRAPH_FANOUT = "langgraph/bench_fanout.py"


def langgraph_fanout_node_ms(peers: Path, workers: int, rounds: int) -> tuple[float, str]:
    """LangGraph's ms per worker node of its fan-out bench, and its output."""
    out = run_peer(peers, LANGGRAPH_FANOUT, workers, rounds)
    found = re.search(r"([\d.]+) ms per worker node", out)
    if found is None:
        raise RuntimeError(f"{LANGGRAPH_FANOUT}: unexpected output {out!r}")
    return float(found[1]), out.strip()


@dataclass(frozen=True)
class SearchFloor:
    """The in-process floor of hybrid search over N chunks: FTS5 + exact dense + fusion."""

    chunks: int
    lexical_p50_ms: float
    dense_p50_ms: float
    fused_p50_ms: float
    output: str


SEARCH_FLOOR = "search/floor.py"


def search_floor(peers: Path, chunks: int, queries: int) -> SearchFloor:
    out = run_peer(peers, SEARCH_FLOOR, chunks, queries)
    found = re.search(
        r"FTS5 p50 ([\d.]+) ms .*exact dense 256-d p50 ([\d.]+) ms .*fused p50 ([\d.]+) ms", out
    )
    if found is None:
        raise RuntimeError(f"{SEARCH_FLOOR}: unexpected output {out!r}")
    return SearchFloor(chunks, float(found[1]), float(found[2]), float(found[3]), out.strip())


def load_average() -> str:
    """The machine's 1-, 5- and 15-minute load averages, to print beside a figure."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} CPUs)"
