from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from vancetope.memory.documents import delete_document
from vancetope.memory.models import Document, DocumentChunk, MemoryItem


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


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("__str__", "project", "media_type", "created_at")
    list_filter = ("project",)
    search_fields = ("title",)
    readonly_fields = ("content", "created_by", "created_at")
    inlines = [ChunkInline]

    def delete_model(self, request: HttpRequest, obj: Document) -> None:
        # Chunks, passages and vectors go with it.
        delete_document(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Document]) -> None:
        for document in queryset:
            delete_document(document)
