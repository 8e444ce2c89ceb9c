"""Memory items: write (or supersede), invalidate, look up by key through the cascade.

Nothing here hard-deletes an item: a write of a key that already holds another value
supersedes the old item (its `valid_to` set, `superseded_by` naming the new one), a delete
invalidates it. A write that repeats what the scope already holds changes nothing and answers
the existing item (adding the same memory twice never loses it).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from vancetope.errors import BadRequest, Conflict, NotFound
from vancetope.ids import parse_public_id
from vancetope.memory.indexing import index, item_passage, unindex
from vancetope.memory.models import CASCADE_ORDER, MemoryItem, Passage, Scope, SourceKind
from vancetope.memory.scopes import Reach, Target

MAX_CONTENT = 20_000


@dataclass(frozen=True)
class Source:
    kind: SourceKind
    id: str = ""


def _same_target(target: Target) -> Q:
    return Q(
        scope=target.scope,
        tenant=target.tenant,
        group=target.group,
        project=target.project,
        session_ref=target.session_ref,
    )


def check_content(content: str, tags: list[str]) -> None:
    if not content.strip():
        raise BadRequest("content must not be empty", error="content", field="content")
    if len(content) > MAX_CONTENT:
        raise BadRequest(
            f"content is longer than {MAX_CONTENT} characters", error="content", field="content"
        )
    if not all(isinstance(tag, str) for tag in tags):
        raise BadRequest("tags must be strings", error="tags", field="tags")


def write_item(
    target: Target,
    content: str,
    source: Source,
    *,
    key: str = "",
    tags: list[str] | None = None,
) -> MemoryItem:
    tags = list(tags or [])
    check_content(content, tags)
    with transaction.atomic():
        current = MemoryItem.objects.select_for_update().filter(
            _same_target(target), valid_to__isnull=True
        )
        current = current.filter(key=key) if key else current.filter(key="", content=content)
        existing = current.order_by("-id").first()
        if existing is not None and existing.content == content and existing.tags == tags:
            return existing
        item = new_item(target, content, source, key=key, tags=tags)
        item.save(force_insert=True)
        if existing is not None:
            _end(existing, f"superseded by {item.public_id}", superseded_by=item)
        index([item_passage(item)])
    return item


def new_item(
    target: Target, content: str, source: Source, *, key: str = "", tags: list[str]
) -> MemoryItem:
    """An item of `target`, not saved yet."""
    return MemoryItem(
        tenant=target.tenant,
        group=target.group,
        project=target.project,
        session_ref=target.session_ref,
        owner_id=target.owner_id,
        scope=target.scope,
        key=key,
        content=content,
        tags=tags,
        source_kind=source.kind,
        source_id=source.id,
    )


def write_new_items(
    target: Target, entries: list[tuple[str, list[str]]], source: Source
) -> list[MemoryItem]:
    """Write several new items without keys ((content, tags) each) in one statement, their
    passages embedded in one batch after the commit: what a compaction writes of the turns it
    folds (processes/capabilities/recall.py), where an item a write_item each would queue an
    embedding of its own. Unlike write_item, an item equal to one already there is written
    again (each is a turn of its own, told at its own time)."""
    for content, tags in entries:
        check_content(content, tags)
    with transaction.atomic():
        items = MemoryItem.objects.bulk_create(
            [new_item(target, content, source, tags=list(tags)) for content, tags in entries]
        )
        index([item_passage(item) for item in items])
    return items


def _end(item: MemoryItem, reason: str, superseded_by: MemoryItem | None = None) -> None:
    now = timezone.now()
    changed = MemoryItem.objects.filter(pk=item.pk, valid_to__isnull=True).update(
        valid_to=now, superseded_by=superseded_by, invalidated_reason=reason[:200]
    )
    if changed:
        item.valid_to, item.superseded_by, item.invalidated_reason = now, superseded_by, reason
        unindex(Passage.objects.filter(item=item).values_list("pk", flat=True))


def invalidate_item(item: MemoryItem, reason: str) -> MemoryItem:
    """End the item's validity (it keeps its row); an invalid item stays as it is."""
    with transaction.atomic():
        _end(item, reason)
    return item


def supersede_item(
    item: MemoryItem, content: str, source: Source, tags: list[str] | None = None
) -> MemoryItem:
    """A new version of the item in its scope (same key); the old one is superseded."""
    target = Target(
        Scope(item.scope),
        item.tenant,
        group=item.group,
        project=item.project,
        session_ref=item.session_ref,
        owner_id=item.owner_id,
    )
    if item.valid_to is not None:
        raise Conflict(
            f"memory item {item.public_id} is no longer valid: change its newest version"
        )
    if not item.key:
        with transaction.atomic():
            new = write_item(target, content, source, tags=item.tags if tags is None else tags)
            if new.pk != item.pk:
                _end(item, f"superseded by {new.public_id}", superseded_by=new)
        return new
    return write_item(
        target, content, source, key=item.key, tags=item.tags if tags is None else tags
    )


def visible_items(reach: Reach, *, include_invalid: bool = False) -> QuerySet[MemoryItem]:
    rows = MemoryItem.objects.filter(reach.q()).select_related("tenant", "project", "group")
    return rows if include_invalid else rows.filter(valid_to__isnull=True)


def get_visible_item(reach: Reach, item_id: str) -> MemoryItem:
    pk = parse_public_id("mem", item_id, "memory item")
    item = visible_items(reach, include_invalid=True).filter(pk=pk).first()
    if item is None:
        raise NotFound(f"memory item {item_id!r} not found")
    return item


def lookup(reach: Reach, key: str) -> MemoryItem | None:
    """The valid item of `key` in the narrowest scope of the reach that holds one."""
    if not key:
        raise BadRequest("key must not be empty", error="key", field="key")
    found = {item.scope: item for item in visible_items(reach).filter(key=key).order_by("id")}
    return next((found[scope] for scope in CASCADE_ORDER if scope in found), None)
