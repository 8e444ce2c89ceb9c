"""The brain linker's scripts and verdicts, and memory items written for it to link."""

from __future__ import annotations

import json
from typing import Any

from tests.support.tenancy import Tenancy
from vancetope.memory.items import Source, write_item
from vancetope.memory.models import (
    Scope,
    SourceKind,
)
from vancetope.memory.scopes import Target

SIX = [
    "The production database runs on PostgreSQL 16.",
    "Deploys to production happen every Tuesday afternoon.",
    "The office coffee machine is on the third floor.",
    "Alice leads the mobile app team.",
    "The public API allows 100 requests per minute per token.",
    "The production database runs on MySQL 8.",
]


def verdict(verdict: str, confidence: float, reasoning: str = "Compared both.") -> str:
    # reasoning first, as the schema asks
    return json.dumps({"reasoning": reasoning, "verdict": verdict, "confidence": confidence})


def contradiction_script(confidence: float = 0.95) -> list[dict[str, Any]]:
    """`contradicts` only for the two database statements (older PostgreSQL, newer MySQL);
    `unrelated` for anything else the linker asks."""
    return [
        {
            "engine": "brain_linker",
            "step": "contradiction_scan",
            "match": "(?s)OLDER.*PostgreSQL 16.*NEWER.*MySQL 8",
            "reply": verdict("contradicts", confidence, "One engine cannot be both."),
        },
        {"engine": "brain_linker", "reply": verdict("unrelated", 0.9)},
    ]


def write(tenancy: Tenancy, content: str, *, key: str = "", scope: Scope = Scope.PROJECT) -> Any:
    target = (
        Target(scope, tenancy.tenant, project=tenancy.project)
        if scope == Scope.PROJECT
        else Target(scope, tenancy.tenant)
    )
    return write_item(target, content, Source(SourceKind.USER, "alice"), key=key)
