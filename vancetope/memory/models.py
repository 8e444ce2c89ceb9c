"""Memory items, documents and their chunks, and the passages search reads.

A passage is one searchable text: a memory item's content or a document chunk. It carries the
scope columns of what it came from, so a search filters by visibility in the same statement
that ranks. Its lexical index (FTS5 on SQLite, a tsvector on PostgreSQL) and its vector live
beside it (migrations 0001 and vectors.py); invalidating an item deletes its passage, so a
search can never return it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from vancetope.tenancy.models import Project, ProjectGroup, Tenant


class Scope(models.TextChoices):
    """Where an item lives; a lookup by key tries them narrowest first."""

    SESSION = "session"  # one session (and the processes in it)
    PROJECT = "project"  # every session of one project
    GROUP = "group"  # every project of one project group
    TENANT = "tenant"  # every project of one tenant


# Narrowest first: the order of a lookup's cascade.
CASCADE_ORDER = (Scope.SESSION, Scope.PROJECT, Scope.GROUP, Scope.TENANT)


class SourceKind(models.TextChoices):
    """Who wrote an item (its provenance)."""

    USER = "user"  # a person, over REST or the admin
    PROCESS = "process"  # a think process, through memory_write / ctx.memory
    DOCUMENT = "document"  # taken from an uploaded document
    LINKER = "linker"  # the brain linker


class MemoryItem(models.Model):
    """One remembered fact. Never hard-deleted by engines: a change supersedes it (a new row,
    this one's valid_to set and superseded_by pointing there), a delete invalidates it."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memory_items")
    group = models.ForeignKey(
        ProjectGroup, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, null=True, blank=True, related_name="memory_items"
    )
    # A session-scope item: the session's primary key (the kernel knows sessions only by id;
    # `project` is the session's project and `owner` its owner, for visibility).
    session_ref = models.BigIntegerField(null=True, blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    scope = models.CharField(max_length=8, choices=Scope.choices)
    key = models.CharField(max_length=200, blank=True)
    content = models.TextField()
    tags = models.JSONField(default=list, blank=True)
    source_kind = models.CharField(max_length=8, choices=SourceKind.choices)
    # The writer: a user's name, a process's tp_ id, a document's doc_ id, a linker run's run_ id.
    source_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    valid_from = models.DateTimeField(default=timezone.now)
    valid_to = models.DateTimeField(null=True, blank=True)
    superseded_by = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # Why valid_to was set, and by whom (the record of the change; the row itself stays).
    invalidated_reason = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["tenant", "scope", "key"], name="memory_item_key"),
        ]

    def __str__(self) -> str:
        return f"{self.public_id} ({self.scope}{': ' + self.key if self.key else ''})"

    @property
    def public_id(self) -> str:
        return f"mem_{self.pk}"

    @property
    def scope_id(self) -> str:
        if self.scope == Scope.SESSION:
            return f"sess_{self.session_ref}"
        if self.scope == Scope.PROJECT and self.project is not None:
            return self.project.public_id
        if self.scope == Scope.GROUP and self.group_id is not None:
            return f"grp_{self.group_id}"
        return self.tenant.slug


class Document(models.Model):
    """An uploaded project document; searched through its chunks."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="documents")
    title = models.CharField(max_length=300)
    media_type = models.CharField(max_length=100, default="text/markdown")
    content = models.TextField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.public_id} {self.title}"

    @property
    def public_id(self) -> str:
        return f"doc_{self.pk}"


class DocumentChunk(models.Model):
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    # The headings above the chunk ("Setup > Database"), searched with it.
    heading = models.CharField(max_length=500, blank=True)
    text = models.TextField()

    class Meta:
        ordering = ["document", "index"]
        constraints = [
            models.UniqueConstraint(fields=["document", "index"], name="uniq_chunk_index")
        ]

    def __str__(self) -> str:
        return f"{self.document.public_id}#{self.index}"


class Passage(models.Model):
    """One searchable text with the scope of what it came from (exactly one of item, chunk)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    group = models.ForeignKey(
        ProjectGroup, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    session_ref = models.BigIntegerField(null=True, blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    scope = models.CharField(max_length=8, choices=Scope.choices)
    item = models.OneToOneField(
        MemoryItem, on_delete=models.CASCADE, null=True, blank=True, related_name="passage"
    )
    chunk = models.OneToOneField(
        DocumentChunk, on_delete=models.CASCADE, null=True, blank=True, related_name="passage"
    )
    text = models.TextField()
    # The embedding (float32, little-endian) once the embedding task has run; its model's name.
    vector = models.BinaryField(null=True, blank=True)
    embedder = models.CharField(max_length=100, blank=True)
    # The vector clock's value when the vector was stored: a store that keeps vectors in memory
    # reads only the rows embedded since it last looked (vectors.py).
    vector_seq = models.BigIntegerField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["tenant", "scope"], name="memory_passage_scope"),
            models.Index(fields=["vector_seq"], name="memory_passage_vector_seq"),
        ]

    def __str__(self) -> str:
        return f"passage {self.pk}"


class VectorClock(models.Model):
    """One row: how many vectors were ever stored. Embedding advances it inside its own
    transaction, so its committed value orders the vectors by commit."""

    value = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"vector clock {self.value}"


class EdgeType(models.TextChoices):
    """What an edge says of its two ends (from → to)."""

    SUPPORTS = "supports"  # from backs up to
    CONTRADICTS = "contradicts"  # from and to cannot both hold
    DERIVED_FROM = "derived_from"  # from was made out of to
    MENTIONS = "mentions"  # from names what to is about


class EdgeAuthor(models.TextChoices):
    """Who made an edge (its provenance)."""

    LINKER = "linker"  # a brain-linker run (created_by_id: its run_ id)
    PROCESS = "process"  # a think process (created_by_id: its tp_ id)
    USER = "user"  # a person (created_by_id: their user name)


class KnowledgeEdge(models.Model):
    """A typed, weighted edge of the knowledge graph between two memory items or document
    chunks (each end is exactly one of item, chunk). Never deleted by engines or the linker:
    an edge that no longer holds gets `valid_to` (and why). Deleting a document, which a person
    does, deletes the edges of its chunks with them."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    type = models.CharField(max_length=12, choices=EdgeType.choices)
    from_item = models.ForeignKey(
        MemoryItem, on_delete=models.CASCADE, null=True, blank=True, related_name="edges_out"
    )
    from_chunk = models.ForeignKey(
        DocumentChunk, on_delete=models.CASCADE, null=True, blank=True, related_name="edges_out"
    )
    to_item = models.ForeignKey(
        MemoryItem, on_delete=models.CASCADE, null=True, blank=True, related_name="edges_in"
    )
    to_chunk = models.ForeignKey(
        DocumentChunk, on_delete=models.CASCADE, null=True, blank=True, related_name="edges_in"
    )
    confidence = models.FloatField()
    reasoning = models.TextField(blank=True)
    created_by_kind = models.CharField(max_length=8, choices=EdgeAuthor.choices)
    created_by_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    valid_to = models.DateTimeField(null=True, blank=True)
    invalidated_reason = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["tenant", "type"], name="memory_edge_type"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(from_item__isnull=False, from_chunk__isnull=True)
                    | models.Q(from_item__isnull=True, from_chunk__isnull=False)
                ),
                name="edge_one_from",
            ),
            models.CheckConstraint(
                condition=(
                    models.Q(to_item__isnull=False, to_chunk__isnull=True)
                    | models.Q(to_item__isnull=True, to_chunk__isnull=False)
                ),
                name="edge_one_to",
            ),
            models.CheckConstraint(
                condition=models.Q(confidence__gte=0.0, confidence__lte=1.0),
                name="edge_confidence_0_1",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.public_id} {self.from_id} {self.type} {self.to_id}"

    @property
    def public_id(self) -> str:
        return f"edge_{self.pk}"

    @property
    def from_id(self) -> str:
        return node_id(self.from_item_id, self.from_chunk)

    @property
    def to_id(self) -> str:
        return node_id(self.to_item_id, self.to_chunk)


def chunk_node_id(document_id: int, index: int) -> str:
    """A document chunk as a node of the graph: `doc_<document>:<chunk index>`."""
    return f"doc_{document_id}:{index}"


def node_id(item_id: int | None, chunk: DocumentChunk | None) -> str:
    if item_id is not None:
        return f"mem_{item_id}"
    assert chunk is not None
    return chunk_node_id(chunk.document_id, chunk.index)


class LinkerVerdict(models.Model):
    """One pair of items a brain-linker strategy judged (an LLM call that answered, or one that
    failed): the next run does not ask about that pair with that strategy again. `newer` is the
    later item of the pair; an edge the verdict wrote runs from it to `older`."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    newer = models.ForeignKey(MemoryItem, on_delete=models.CASCADE, related_name="+")
    older = models.ForeignKey(MemoryItem, on_delete=models.CASCADE, related_name="+")
    strategy = models.CharField(max_length=32)
    # contradicts, supports, unrelated; or "error" (the call failed or its answer did not fit).
    verdict = models.CharField(max_length=12)
    confidence = models.FloatField(null=True, blank=True)
    reasoning = models.TextField(blank=True)
    error = models.TextField(blank=True)
    edge = models.ForeignKey(
        KnowledgeEdge, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # The linker run (its run_ id) and the APPROVAL it asked for (its inb_ id), if any: the
    # kernel knows runs and inbox items only by their public ids.
    run_id = models.CharField(max_length=40, blank=True)
    approval_id = models.CharField(max_length=40, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["approval_id"], name="memory_verdict_approval"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["newer", "older", "strategy"], name="uniq_linker_verdict_pair"
            )
        ]

    def __str__(self) -> str:
        return f"{self.newer_id}/{self.older_id} {self.strategy}: {self.verdict}"
