from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from vancetope.memory.documents import delete_document
from vancetope.memory.graph import invalidate_edge
from vancetope.memory.models import Document, DocumentChunk, KnowledgeEdge, MemoryItem


@admin.register(MemoryItem)
class MemoryItemAdmin(admin.ModelAdmin):
    list_display = ("__str__", "scope", "key", "tenant", "project", "source_kind", "valid_to")
    list_filter = ("scope", "source_kind", "tenant")
    search_fields = ("key", "content")
    readonly_fields = ("created_at", "superseded_by", "session_ref", "invalidated_reason")


class ChunkInline(admin.TabularInline):
    model = DocumentChunk
    fields = ("index", "heading", "text")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Chunks are cut from the content when the document is uploaded, never by hand.
        return False


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("__str__", "project", "media_type", "chunk_count", "created_at")
    list_filter = ("media_type", "tenant", "project")
    search_fields = ("title",)
    readonly_fields = ("media_type", "content", "created_by", "created_at")
    inlines = [ChunkInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Document]:
        return super().get_queryset(request).annotate(chunk_total=Count("chunks"))

    @admin.display(description="chunks", ordering="chunk_total")
    def chunk_count(self, obj: Document) -> int:
        return int(getattr(obj, "chunk_total", 0))

    def has_add_permission(self, request: HttpRequest) -> bool:
        # A document is uploaded (REST or the web UI), which chunks and indexes it.
        return False

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        # The edges of its chunks go with a document, though an edge is never deleted alone.
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        perms_needed.discard(str(KnowledgeEdge._meta.verbose_name))
        return deleted, counts, perms_needed, protected

    def delete_model(self, request: HttpRequest, obj: Document) -> None:
        # Chunks, passages and vectors go with it.
        delete_document(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        for document in queryset:
            delete_document(document)


class ValidFilter(admin.SimpleListFilter):
    title = "validity"
    parameter_name = "valid"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "valid"), ("no", "invalidated")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.filter(valid_to__isnull=True)
        if self.value() == "no":
            return queryset.filter(valid_to__isnull=False)
        return queryset


@admin.register(KnowledgeEdge)
class KnowledgeEdgeAdmin(admin.ModelAdmin):
    """Edges are made by the linker, processes and people (REST); here they are read and
    invalidated, never edited or deleted (an edge that no longer holds gets validTo)."""

    list_display = (
        "__str__",
        "type",
        "confidence",
        "created_by_kind",
        "created_by_id",
        "created_at",
        "is_valid",
        "tenant",
    )
    list_filter = ("type", "created_by_kind", ValidFilter, "tenant")
    search_fields = ("reasoning", "created_by_id", "invalidated_reason")
    fields = (
        "tenant",
        "type",
        "from_node",
        "to_node",
        "confidence",
        "reasoning",
        "created_by_kind",
        "created_by_id",
        "created_at",
        "valid_to",
        "invalidated_reason",
    )
    readonly_fields = fields
    actions = ["invalidate"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[KnowledgeEdge]:
        return super().get_queryset(request).select_related("tenant", "from_chunk", "to_chunk")

    @admin.display(description="from")
    def from_node(self, obj: KnowledgeEdge) -> str:
        return obj.from_id

    @admin.display(description="to")
    def to_node(self, obj: KnowledgeEdge) -> str:
        return obj.to_id

    @admin.display(description="valid", boolean=True)
    def is_valid(self, obj: KnowledgeEdge) -> bool:
        return obj.valid_to is None

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Invalidate the selected edges (they stay, with validTo)")
    def invalidate(self, request: HttpRequest, queryset: QuerySet[KnowledgeEdge]) -> None:
        reason = f"invalidated in the admin by {request.user.get_username()}"
        done = 0
        for edge in queryset.filter(valid_to__isnull=True):
            invalidate_edge(edge, reason)
            done += 1
        skipped = queryset.count() - done
        note = f"; {skipped} already invalid, left as they were" if skipped else ""
        self.message_user(request, f"{done} edges invalidated{note}.", messages.SUCCESS)
