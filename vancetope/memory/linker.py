"""The brain linker: pairs a project's recent memory items with their nearest neighbours on the
same subject, asks the LLM for a verdict on each pair, and writes what it says into the
knowledge graph (docs/memory.md, "The brain linker").

Candidates are never the whole graph: each recent item (created since the project's previous
completed linker run, or within `linker.windowHours`) is paired only with its
`linker.neighbours` nearest valid items that the project sees (memory/scopes.py
`project_reach`) and that are on the same subject: the same key, or a cosine similarity of at
least `linker.minSimilarity` (of their vectors when both have one, else of their word sets).
A pair a strategy judged before (a LinkerVerdict row), or that a valid `contradicts` or
`supports` edge already joins, is not asked again.

Each pair is one LLM call (caller engine `brain_linker`, step the strategy's name) whose answer
is one JSON object, reasoning first: `{"reasoning", "verdict": contradicts|supports|unrelated,
"confidence": 0..1}`. A call that fails or answers anything else counts as a call, writes no
edge and is reported; the run goes on. The run stops at `max_llm_calls`.

A `contradicts` verdict writes the edge newer → older; at or above
`linker.contradictionThreshold` it invalidates the older item, below it the run's approval
poster asks a person (an APPROVAL inbox item), whose answer `settle_approval` applies.
A `supports` verdict writes the edge newer → older. This kernel imports no app: the app that
runs it hands it its approval poster (`run_linker(..., ask=...)`:
triggers/cron/brain_linker.py posts to the inbox of the run's owner).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from vancetope.config import keys
from vancetope.config.llm import llm_config, project_settings
from vancetope.errors import BadRequest
from vancetope.llm.base import CallInfo, collect
from vancetope.llm.factory import get_provider
from vancetope.memory.graph import Author, Node, add_edge, invalidate_edge
from vancetope.memory.items import invalidate_item, visible_items
from vancetope.memory.linker_pairs import ERROR, Neighbours, Pair, both_valid, judged
from vancetope.memory.linker_prompt import (
    CONTRADICTION_SCAN,
    STRATEGIES,
    SUPPORT_SCAN,
    VERDICTS,
    Verdict,
    parse_verdict,
    prompt,
)
from vancetope.memory.models import EdgeAuthor, EdgeType, KnowledgeEdge, LinkerVerdict, MemoryItem
from vancetope.memory.scopes import project_reach
from vancetope.tenancy.models import Project

__all__ = [
    "CONTRADICTION_SCAN",
    "STRATEGIES",
    "SUPPORT_SCAN",
    "VERDICTS",
    "LinkerReport",
    "Pair",
    "Uncertain",
    "Verdict",
    "check_strategies",
    "parse_verdict",
    "run_linker",
    "settle_approval",
]

log = logging.getLogger(__name__)

ENGINE = "brain_linker"
# Recent items one run looks at (oldest first); the next run takes the rest.
MAX_RECENT = 500


@dataclass(frozen=True)
class Uncertain:
    """A contradiction below the threshold, for the app's approval poster."""

    project: Project
    run_id: str
    edge: KnowledgeEdge
    newer: MemoryItem
    older: MemoryItem
    reasoning: str
    confidence: float
    threshold: float


# Posts the APPROVAL of an uncertain contradiction; answers the inbox item's public id.
ApprovalPoster = Callable[[Uncertain], str]


@dataclass
class LinkerReport:
    run_id: str
    strategies: list[str]
    max_llm_calls: int
    since: datetime | None = None
    # Distinct (pair, strategy) candidates found, and those not asked (judged before, an
    # edge joins them already, or one of them was invalidated meanwhile).
    pairs_considered: int = 0
    pairs_skipped: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    verdicts: int = 0
    edges_created: dict[str, int] = field(
        default_factory=lambda: {EdgeType.CONTRADICTS.value: 0, EdgeType.SUPPORTS.value: 0}
    )
    items_invalidated: list[str] = field(default_factory=list)
    approvals_posted: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # (newer mem_ id, older mem_ id, strategy) of every call, in order.
    asked: list[tuple[str, str, str]] = field(default_factory=list)
    # True when max_llm_calls stopped the run with pairs left to ask.
    cut_short: bool = False

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def status(self) -> str:
        """completed, completed_partial (cut short, or some calls failed) or failed (every
        call failed)."""
        if self.errors and self.verdicts == 0:
            return "failed"
        if self.errors or self.cut_short:
            return "completed_partial"
        return "completed"

    def summary(self) -> str:
        """One line for the run's record."""
        parts = [
            f"{self.llm_calls} of at most {self.max_llm_calls} LLM calls",
            f"{self.pairs_considered} pairs considered ({self.pairs_skipped} not asked)",
            ", ".join(f"{count} {kind}" for kind, count in self.edges_created.items()) + " edges",
        ]
        if self.items_invalidated:
            parts.append("invalidated " + ", ".join(self.items_invalidated))
        if self.approvals_posted:
            parts.append("asked " + ", ".join(self.approvals_posted))
        if self.cut_short:
            parts.append("stopped at maxLlmCalls with pairs left")
        if self.errors:
            parts.append(f"{len(self.errors)} failed: {self.errors[0]}")
        return "; ".join(parts)


def check_strategies(strategies: list[str], where: str = "strategies") -> list[str]:
    """The strategies to run, in their order (none named: all of them); an unknown one is a
    400 naming `where`."""
    unknown = [name for name in strategies if name not in STRATEGIES]
    if unknown:
        raise BadRequest(
            f"{where}: unknown strategy {unknown[0]!r}; use {', '.join(STRATEGIES)}", error=where
        )
    return list(dict.fromkeys(strategies)) or list(STRATEGIES)


def run_linker(
    project: Project,
    strategies: list[str],
    max_llm_calls: int | None,
    *,
    run_id: str = "",
    since: datetime | None = None,
    ask: ApprovalPoster | None = None,
) -> LinkerReport:
    """One linker run over `project`'s recent items (those created after `since`; None: within
    the window setting). Never raises for a call's failure: it is in the report."""
    names = check_strategies(strategies)
    cascade = project_settings(project)
    limit = max_llm_calls or int(cascade.value(keys.LINKER_MAX_LLM_CALLS.name))
    if limit < 1:
        raise BadRequest("maxLlmCalls must be at least 1", error="maxLlmCalls", field="maxLlmCalls")
    if since is None:
        hours = int(cascade.value(keys.LINKER_WINDOW_HOURS.name))
        since = timezone.now() - timedelta(hours=hours)
    report = LinkerReport(run_id=run_id, strategies=names, max_llm_calls=limit, since=since)
    finder = Neighbours(
        project_reach(project),
        int(cascade.value(keys.LINKER_NEIGHBOURS.name)),
        float(cascade.value(keys.LINKER_MIN_SIMILARITY.name)),
    )
    threshold = float(cascade.value(keys.LINKER_THRESHOLD.name))
    provider = get_provider(llm_config(cascade))
    poster = ask
    recent = list(
        visible_items(finder.reach)
        .filter(created_at__gt=since)
        .order_by("created_at", "pk")[:MAX_RECENT]
    )
    for strategy, pair in _candidates(recent, names, finder, report):
        if report.llm_calls >= limit:
            report.cut_short = True
            break
        report.llm_calls += 1
        report.asked.append((pair.newer.public_id, pair.older.public_id, strategy))
        verdict, error = _ask(provider, strategy, pair, report)
        if verdict is None:
            report.errors.append(f"{pair.newer.public_id}/{pair.older.public_id}: {error}")
            _record(project, pair, strategy, run_id, None, error)
            continue
        try:
            with transaction.atomic():
                applied = _apply(project, pair, strategy, verdict, run_id, threshold, poster)
        except Exception as exc:
            log.exception("linker %s: applying a verdict failed", run_id)
            report.errors.append(
                f"{pair.newer.public_id}/{pair.older.public_id}: {type(exc).__name__}: {exc}"
            )
            continue
        report.verdicts += 1
        if applied.edge:
            report.edges_created[applied.edge] += 1
        if applied.invalidated:
            report.items_invalidated.append(applied.invalidated)
        if applied.approval:
            report.approvals_posted.append(applied.approval)
    log.info("linker %s on %s: %s", run_id or "-", project.public_id, report.summary())
    return report


def _candidates(
    recent: list[MemoryItem], strategies: list[str], finder: Neighbours, report: LinkerReport
) -> Iterator[tuple[str, Pair]]:
    """The (strategy, pair) calls to make, lazily: whether a pair is still worth asking is
    decided just before it is asked (an earlier verdict may have invalidated one of its
    items)."""
    for strategy in strategies:
        seen: set[tuple[int, int]] = set()
        for item in recent:
            for pair in finder.pairs_of(item):
                if pair.key in seen:
                    continue
                seen.add(pair.key)
                report.pairs_considered += 1
                if not both_valid(pair) or judged(pair, strategy):
                    report.pairs_skipped += 1
                    continue
                yield strategy, pair


# --- the call ------------------------------------------------------------------------------------


def _ask(
    provider: Any, strategy: str, pair: Pair, report: LinkerReport
) -> tuple[Verdict | None, str]:
    try:
        answer = collect(
            provider.stream(prompt(strategy, pair), None, CallInfo(engine=ENGINE, step=strategy))
        )
    except Exception as exc:  # noqa: BLE001 (any provider failure is this call's, not the run's)
        return None, f"the LLM call failed: {exc}"
    report.prompt_tokens += answer.usage.prompt_tokens
    report.completion_tokens += answer.usage.completion_tokens
    try:
        return parse_verdict(answer.text), ""
    except ValueError as exc:
        return None, f"the answer is not a verdict: {exc}"


# --- what a verdict writes -----------------------------------------------------------------------


def _record(
    project: Project,
    pair: Pair,
    strategy: str,
    run_id: str,
    verdict: Verdict | None,
    error: str = "",
    edge: KnowledgeEdge | None = None,
) -> LinkerVerdict:
    row, _ = LinkerVerdict.objects.update_or_create(
        newer_id=pair.newer.pk,
        older_id=pair.older.pk,
        strategy=strategy,
        defaults={
            "tenant_id": project.tenant_id,
            "project": project,
            "verdict": verdict.verdict if verdict else ERROR,
            "confidence": verdict.confidence if verdict else None,
            "reasoning": verdict.reasoning if verdict else "",
            "error": error[:2000],
            "edge": edge,
            "run_id": run_id,
            "approval_id": "",
            "created_at": timezone.now(),
        },
    )
    return row


@dataclass(frozen=True)
class Applied:
    edge: str = ""  # the type of the edge written
    invalidated: str = ""  # the item invalidated
    approval: str = ""  # the approval asked for


def _apply(
    project: Project,
    pair: Pair,
    strategy: str,
    verdict: Verdict,
    run_id: str,
    threshold: float,
    poster: ApprovalPoster | None,
) -> Applied:
    """What the verdict writes (in the caller's transaction: all of it, or none)."""
    if verdict.verdict == "unrelated":
        _record(project, pair, strategy, run_id, verdict)
        return Applied()
    kind = EdgeType.CONTRADICTS if verdict.verdict == "contradicts" else EdgeType.SUPPORTS
    edge = add_edge(
        kind,
        Node(item=pair.newer),
        Node(item=pair.older),
        verdict.confidence,
        verdict.reasoning,
        Author(EdgeAuthor.LINKER, run_id),
    )
    row = _record(project, pair, strategy, run_id, verdict, edge=edge)
    if kind != EdgeType.CONTRADICTS:
        return Applied(kind.value)
    if verdict.confidence >= threshold:
        invalidate_item(pair.older, _contradicted(edge, pair.newer, run_id))
        return Applied(kind.value, invalidated=pair.older.public_id)
    if poster is None:
        raise RuntimeError("this run has no approval poster for uncertain contradictions")
    approval = poster(
        Uncertain(
            project,
            run_id,
            edge,
            pair.newer,
            pair.older,
            verdict.reasoning,
            verdict.confidence,
            threshold,
        )
    )
    LinkerVerdict.objects.filter(pk=row.pk).update(approval_id=approval)
    return Applied(kind.value, approval=approval)


def _contradicted(edge: KnowledgeEdge, newer: MemoryItem, run_id: str) -> str:
    by = f", linker {run_id}" if run_id else ""
    return f"contradicted by {newer.public_id} ({edge.public_id}{by})"


# --- a person's answer ---------------------------------------------------------------------------


def settle_approval(approval_id: str, approved: bool, by: str) -> str | None:
    """A person's answer to the APPROVAL of an uncertain contradiction (`approval_id`, its
    inb_ id): approve invalidates the older item (the edge stays), reject invalidates the
    edge. What was done, for the item's note; None when no verdict asked for `approval_id`."""
    row = (
        LinkerVerdict.objects.select_related("edge", "newer", "older")
        .filter(approval_id=approval_id)
        .first()
    )
    if row is None or row.edge is None:
        return None
    if approved:
        reason = f"{_contradicted(row.edge, row.newer, row.run_id)}, approved by {by}"
        invalidate_item(row.older, reason)
        return f"{row.older.public_id} invalidated; {row.edge.public_id} stays"
    invalidate_edge(row.edge, f"rejected by {by}")
    return f"{row.edge.public_id} invalidated; {row.older.public_id} stays"
