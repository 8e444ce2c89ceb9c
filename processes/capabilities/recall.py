"""Recall: what a compaction folded stays findable, and each call gets the earlier turns most
relevant to the message it answers.

Two places hold the folded turns:

- the session's memory: the compaction writes each folded turn as an item (scope `session`,
  source the process, tags `conversation`, the process's id and `index:N`), so the hybrid
  search finds them for arthur's `memory_search` and for the person on the memory page;
- a BM25 index of the folded turns in the worker's memory (bm25s), made at the first call
  after a compaction (a few milliseconds for a thousand turns) and kept per (process,
  conversation epoch): each call of a compacted conversation asks it with the message being
  answered, a fraction of a millisecond where the hybrid search over the database took several
  (the default chat's turn is about 3 ms: issue "Long-lived for real" allows it 5 % more).

A summary keeps the gist; recall brings back the exact words of a turn the summary let go (a
code word told at turn 3, asked for at turn 60). The setting `llm.recall` turns both off.
"""

from __future__ import annotations

import re
from collections import Counter

import bm25s
import numpy
from django.utils import timezone

from processes.capabilities.kept import Kept
from vancetope.llm.assembly import group_turns
from vancetope.llm.base import LlmMessage
from vancetope.memory.capability import MemoryAccess
from vancetope.memory.models import MemoryItem

TAG = "conversation"
# The tag that gives the conversation index of a recalled turn's first message.
INDEX_TAG = "index:"
# The most recalled turns a call gets (the assembly keeps those that fit the recall share).
RECALLED = 4
# How a recalled turn is introduced to the model.
HEAD = "[Recalled from earlier in this conversation]"
# Words of one character count (a locker's number, a version's digit): bm25s's default pattern
# drops them.
TOKENS = r"(?u)\b\w+\b"
# A word in at most this share of the folded turns is rare: a message recalls turns only by a
# rare word (a name, a number, a code), never by words most turns share.
RARE_SHARE = 0.1
# Indexes kept per worker OS process (one per compacted conversation in use).
KEPT_INDEXES = 64


def index_folded(
    memory: MemoryAccess, process_id: str, folded: list[LlmMessage], indexes: list[int]
) -> int:
    """Write each turn of `folded` (whose conversation indexes are `indexes`) to the session's
    memory, tagged with the index of its first message (an undo of a turn takes back the
    items of the turns it hid: forget_from), in one statement and one embedding batch;
    returns how many were written."""
    entries, at = [], 0
    for turn in group_turns(folded):
        text = turn_text(turn)
        if text:
            entries.append((text, [TAG, process_id, f"{INDEX_TAG}{indexes[at]}"]))
        at += len(turn)
    memory.write_new_items(entries, scope="session")
    return len(entries)


def forget_from(process_id: str, index: int, reason: str) -> int:
    """Invalidate the recall items of the process's turns from conversation index `index` on
    (an undo hid them); returns how many."""
    gone = []
    items = MemoryItem.objects.filter(source_id=process_id, valid_to__isnull=True)
    for pk, tags in items.values_list("pk", "tags"):
        at = next((t for t in tags if isinstance(t, str) and t.startswith(INDEX_TAG)), None)
        if TAG in tags and at is not None and int(at.removeprefix(INDEX_TAG)) >= index:
            gone.append(pk)
    return MemoryItem.objects.filter(pk__in=gone).update(
        valid_to=timezone.now(), invalidated_reason=reason[:200]
    )


def turn_text(turn: list[LlmMessage]) -> str:
    """A turn as one text: each message's role and words (tool calls by name)."""
    lines = []
    for message in turn:
        calls = "".join(f" [called {call.name}]" for call in message.tool_calls)
        if message.content or calls:
            lines.append(f"{message.role}: {message.content}{calls}".strip())
    return "\n".join(lines)


class RecallIndex:
    """BM25 over the turns of the folded messages."""

    def __init__(self, folded: list[LlmMessage]) -> None:
        self.texts = [text for text in map(turn_text, group_turns(folded)) if text]
        self._bm25 = bm25s.BM25()
        self._rare: frozenset[str] = frozenset()
        if not self.texts:
            return
        tokens = bm25s.tokenize(self.texts, token_pattern=TOKENS, show_progress=False)
        self._bm25.index(tokens, show_progress=False)
        counts: Counter[int] = Counter()
        for ids in tokens.ids:
            counts.update(set(ids))
        most = max(1, int(len(self.texts) * RARE_SHARE))
        self._rare = frozenset(word for word, at in tokens.vocab.items() if counts[at] <= most)

    def search(self, query: str) -> list[LlmMessage]:
        """The folded turns that share words with `query`, best first; none unless one of its
        words is rare in them (in at most RARE_SHARE of the turns): a message made of words
        every turn has ("some small talk about the weather") would recall turns by chance,
        and costs no scoring. The query's words are looked up as the index split its texts
        (lower case; stop words are not in its vocabulary) and scored with `get_scores`."""
        words = _WORDS.findall(query.lower())
        if not any(word in self._rare for word in words):
            return []
        vocabulary = self._bm25.vocab_dict
        scores = self._bm25.get_scores([word for word in words if word in vocabulary])
        k = min(RECALLED, len(scores))
        best = numpy.argpartition(-scores, k - 1)[:k]
        ranked = sorted((int(at) for at in best if scores[at] > 0), key=lambda at: -scores[at])
        return [LlmMessage(role="system", content=f"{HEAD}\n{self.texts[at]}") for at in ranked]


_WORDS = re.compile(TOKENS)
_indexes: Kept[RecallIndex] = Kept(KEPT_INDEXES)


def recall_index(process_id: int, state: tuple[int, int], folded: list[LlmMessage]) -> RecallIndex:
    """The index of a process's folded messages, made once per (process, (conversation epoch,
    folds)): a compaction and its undo move `folds`, an undo of a turn the epoch. The lane
    makes it right after a compaction, so the next turn finds it here."""
    return _indexes.get((process_id, state), lambda: RecallIndex(folded))


def forget_indexes() -> None:
    """Drop the kept indexes (tests: ids start again with every test's database)."""
    _indexes.clear()
