"""docs/protocol.md cannot drift: every request, reply and event of the frame models, every
field of every event, and every REST path of the OpenAPI document is on it; the README links
the docs and points at nothing outside the repository."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from drf_spectacular.generators import SchemaGenerator

from protocol import inbound, outbound

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = (ROOT / "docs" / "protocol.md").read_text()
README = (ROOT / "README.md").read_text()


def documented(name: str, text: str = PROTOCOL) -> bool:
    return f"`{name}`" in text


def event_rows() -> dict[str, str]:
    """The rows of the Events table, by event name."""
    section = PROTOCOL.split("### Events", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        found = re.match(r"\| `([a-z-]+)` \|(.*)\|$", line)
        if found:
            rows[found.group(1)] = found.group(2)
    return rows


def test_every_request_type_is_documented():
    missing = sorted(kind for kind in inbound.FRAME_TYPES if not documented(kind))
    assert missing == []


def test_every_reply_type_is_documented():
    mapping = outbound.server_frame.json_schema()["discriminator"]["mapping"]
    replies = set(mapping) - {"event"}
    assert len(replies) > 10  # the union was read
    assert sorted(kind for kind in replies if not documented(kind)) == []


@pytest.mark.parametrize("name", sorted(outbound.EVENT_MODELS))
def test_every_event_and_each_of_its_fields_is_in_the_events_table(name):
    rows = event_rows()
    assert name in rows, f"event {name!r} has no row in docs/protocol.md's Events table"
    fields = list(outbound.EVENT_MODELS[name].model_fields)
    assert [field for field in fields if f"`{field}`" not in rows[name]] == []


def test_the_events_table_lists_no_event_the_brain_does_not_send():
    assert sorted(set(event_rows()) - set(outbound.EVENT_MODELS)) == []


def test_every_rest_path_is_documented(db):
    schema = SchemaGenerator().get_schema(request=None, public=True)
    paths = sorted(schema["paths"])
    assert "/api/processes" in paths
    assert [path for path in paths if not documented(path)] == []


def test_every_scripted_rule_key_is_documented():
    from vancetope.llm.script_rules import RULE_KEYS

    section = PROTOCOL.split("## The scripted LLM's script", 1)[1]
    assert sorted(key for key in RULE_KEYS if not documented(key, section)) == []


def test_the_readme_links_the_docs_and_nothing_outside_the_repository():
    for doc in sorted(ROOT.glob("docs/*.md")):
        assert f"](docs/{doc.name})" in README, doc.name
    assert "](CONTRIBUTING.md)" in README
    for text, where in (
        (README, ROOT),
        ((ROOT / "CONTRIBUTING.md").read_text(), ROOT),
        *((p.read_text(), p.parent) for p in ROOT.glob("docs/*.md")),
    ):
        assert "PROTOCOL.md" not in text
        assert "ARCHITECTURE" not in text
        assert "/work/" not in text
        assert "../shared" not in text
        assert not re.search(r"\bseed 0\d\d", text)
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
            if "://" in target:
                continue
            assert (where / target).exists(), target


def test_the_readme_is_an_entry_page_not_a_manual():
    assert len(README.splitlines()) <= 300


def test_no_code_names_a_document_outside_the_repository():
    tracked = subprocess.run(
        ["git", "ls-files", "*.py", "*.js", "*.html", "*.toml", "*.yaml", ".ci/run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    outside = re.compile(r"ARCHITECTURE §|PROTOCOL\.md|\bseed 0\d\d|\.\./shared")
    named = [path for path in tracked if outside.search((ROOT / path).read_text())]
    assert named == [Path(__file__).relative_to(ROOT).as_posix()]
