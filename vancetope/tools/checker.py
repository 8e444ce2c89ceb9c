"""The synchronous checker: classify a tool failure by rule, without an LLM.

Most failures have an obvious cause; only what no rule explains is AMBIGUOUS and goes to
agrajag (see vancetope.tools.health).
"""

from __future__ import annotations

import re
from enum import StrEnum


class Classification(StrEnum):
    AUTH = "auth"  # credentials missing, wrong or expired
    NOT_FOUND = "not-found"  # the tool, or what it was asked about, does not exist
    BAD_ARGUMENTS = "bad-arguments"  # the caller's arguments were wrong
    TIMEOUT = "timeout"  # no answer in time
    RATE_LIMIT = "rate-limit"  # too many calls
    DISCONNECTED_CLIENT = "disconnected-client"  # the client that runs the tool is gone
    SERVER_CRASH = "server-crash"  # the MCP server process died or closed the connection
    NOT_ALLOWED = "not-allowed"  # outside the process's pool
    AMBIGUOUS = "ambiguous"  # no rule applies: agrajag diagnoses it


# Tried in order; the first pattern found in the error text wins.
RULES: list[tuple[Classification, re.Pattern[str]]] = [
    (Classification.DISCONNECTED_CLIENT, re.compile(r"client (is )?(disconnected|gone|not bound)")),
    (
        Classification.SERVER_CRASH,
        re.compile(r"crashed|connection closed|closed the connection|broken pipe|\beof\b"),
    ),
    (Classification.TIMEOUT, re.compile(r"timed? ?out|timeout|deadline exceeded")),
    (Classification.RATE_LIMIT, re.compile(r"rate.?limit|too many requests|\b429\b|quota")),
    (
        Classification.AUTH,
        re.compile(r"unauthori[sz]ed|forbidden|permission denied|\b40[13]\b|auth|credential"),
    ),
    (
        Classification.NOT_FOUND,
        re.compile(r"not found|no such|does not exist|unknown tool|\b404\b"),
    ),
    (
        Classification.BAD_ARGUMENTS,
        re.compile(r"invalid (argument|param|value)|validation error|bad argument|required"),
    ),
]


def classify(error: str) -> Classification:
    text = error.lower()
    for classification, pattern in RULES:
        if pattern.search(text):
            return classification
    return Classification.AMBIGUOUS
