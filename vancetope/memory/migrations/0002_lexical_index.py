"""The lexical index of passages: an FTS5 table kept by triggers on SQLite, a generated
tsvector column with a GIN index on PostgreSQL (vancetope/memory/lexical.py reads them)."""

from __future__ import annotations

from typing import Any

from django.db import migrations

SQLITE = [
    "CREATE VIRTUAL TABLE memory_passage_fts USING fts5(text, content='memory_passage', "
    "content_rowid='id', tokenize='porter unicode61')",
    "CREATE TRIGGER memory_passage_ai AFTER INSERT ON memory_passage BEGIN "
    "INSERT INTO memory_passage_fts(rowid, text) VALUES (new.id, new.text); END",
    "CREATE TRIGGER memory_passage_ad AFTER DELETE ON memory_passage BEGIN "
    "INSERT INTO memory_passage_fts(memory_passage_fts, rowid, text) "
    "VALUES ('delete', old.id, old.text); END",
    "CREATE TRIGGER memory_passage_au AFTER UPDATE OF text ON memory_passage BEGIN "
    "INSERT INTO memory_passage_fts(memory_passage_fts, rowid, text) "
    "VALUES ('delete', old.id, old.text); "
    "INSERT INTO memory_passage_fts(rowid, text) VALUES (new.id, new.text); END",
]
SQLITE_BACK = [
    "DROP TRIGGER memory_passage_au",
    "DROP TRIGGER memory_passage_ad",
    "DROP TRIGGER memory_passage_ai",
    "DROP TABLE memory_passage_fts",
]
POSTGRESQL = [
    "ALTER TABLE memory_passage ADD COLUMN text_search tsvector "
    "GENERATED ALWAYS AS (to_tsvector('english', text)) STORED",
    "CREATE INDEX memory_passage_text_search ON memory_passage USING GIN (text_search)",
]
POSTGRESQL_BACK = [
    "DROP INDEX memory_passage_text_search",
    "ALTER TABLE memory_passage DROP COLUMN text_search",
]


def run(statements: dict[str, list[str]]) -> Any:
    def apply(apps: Any, schema_editor: Any) -> None:
        for statement in statements.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return apply


class Migration(migrations.Migration):
    dependencies = [("memory", "0001_initial")]

    operations = [
        migrations.RunPython(
            run({"sqlite": SQLITE, "postgresql": POSTGRESQL}),
            run({"sqlite": SQLITE_BACK, "postgresql": POSTGRESQL_BACK}),
        )
    ]
