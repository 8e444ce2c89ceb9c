"""What the brain linker asks the LLM about a pair, and how its answer is read: one JSON
object, reasoning first (docs/engines.md, step `contradiction_scan` / `support_scan`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from vancetope.llm.base import LlmMessage
from vancetope.memory.linker_pairs import Pair
from vancetope.memory.models import MemoryItem

CONTRADICTION_SCAN = "contradiction_scan"
SUPPORT_SCAN = "support_scan"
STRATEGIES = (CONTRADICTION_SCAN, SUPPORT_SCAN)
VERDICTS = ("contradicts", "supports", "unrelated")
# The text of an item the LLM is shown.
MAX_STATEMENT = 4_000

SYSTEM_PROMPT = """You check a knowledge base for statements that contradict or support \
each other. You are given two statements, OLDER and NEWER, about the same subject.
{task}
Answer with exactly one JSON object and nothing else, with these keys in this order:
{{"reasoning": "<your reasoning, written first, before you decide>", \
"verdict": "contradicts" | "supports" | "unrelated", "confidence": <a number from 0 to 1>}}
- "contradicts": both cannot be true at the same time.
- "supports": the newer statement backs up or confirms the older one.
- "unrelated": neither (different subjects, or compatible facts that do not confirm each other).
"confidence" is how sure you are of the verdict."""

TASKS = {
    CONTRADICTION_SCAN: "Your task: decide whether the NEWER statement contradicts the OLDER "
    "one. Different details that can both hold are not a contradiction.",
    SUPPORT_SCAN: "Your task: decide whether the NEWER statement supports (confirms, gives "
    "evidence for) the OLDER one.",
}


@dataclass(frozen=True)
class Verdict:
    reasoning: str
    verdict: str
    confidence: float


def prompt(strategy: str, pair: Pair) -> list[LlmMessage]:
    """The call's messages: the strategy's task, then the two statements (older first)."""

    def statement(label: str, item: MemoryItem) -> str:
        about = f", key {item.key!r}" if item.key else ""
        written = item.created_at.strftime("%Y-%m-%d %H:%M UTC")
        return (
            f"{label} ({item.public_id}, {item.scope} scope{about}, written {written}):\n"
            f"{item.content[:MAX_STATEMENT]}"
        )

    return [
        LlmMessage("system", SYSTEM_PROMPT.format(task=TASKS[strategy])),
        LlmMessage(
            "user",
            f"{statement('OLDER', pair.older)}\n\n{statement('NEWER', pair.newer)}\n\n"
            "Answer with the JSON object only.",
        ),
    ]


def parse_verdict(text: str) -> Verdict:
    """The verdict of an answer (a JSON object, perhaps in a ```json fence); ValueError saying
    what does not fit."""
    stripped = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", stripped, re.DOTALL)
    if fenced:
        stripped = fenced.group(1)
    start, end = stripped.find("{"), stripped.rfind("}")
    if start < 0 or end < start:
        raise ValueError(f"no JSON object in {_short(text)!r}")
    try:
        data = json.loads(stripped[start : end + 1])
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON ({exc.msg}) in {_short(text)!r}") from None
    if not isinstance(data, dict):
        raise ValueError("the JSON is not an object")
    reasoning, verdict, confidence = (data.get(k) for k in ("reasoning", "verdict", "confidence"))
    if not isinstance(reasoning, str) or not reasoning.strip():
        raise ValueError("reasoning must be a non-empty string")
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}, not {verdict!r}")
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not 0 <= confidence <= 1
    ):
        raise ValueError(f"confidence must be a number from 0 to 1, not {confidence!r}")
    return Verdict(reasoning.strip(), str(verdict), float(confidence))


def _short(text: str) -> str:
    return text if len(text) <= 120 else text[:119] + "…"
