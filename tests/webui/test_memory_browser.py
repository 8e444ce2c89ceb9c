"""The memory page in a real browser (Debian's Chromium, driven by Playwright) against a real
Brain OS process: the knowledge graph drawn (nodes and edges, one colour per type), filtered
by type, invalid edges dashed behind a toggle, a node's text and edges beside the graph; and
documents uploaded (pasted text, a Markdown file, a PDF) and deleted from the page; on a
phone-sized screen too. Screenshots go to test-artifacts/.

With DATABASE_URL and REDIS_URL set the Brain runs distributed on them (a scratch PostgreSQL
database, a Celery worker on a queue of its own); else on its own SQLite file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.brain import (
    Brain,
    CeleryWorker,
    bootstrap,
    brain_env,
    free_port,
    last_line,
    manage_shell,
    run_services,
)
from tests.support.browser import CHROMIUM, open_tab, screenshot
from tests.support.pdf import minimal_pdf

PASSWORD = "pw-memory-page"
# Three items and a document of two chunks in proj_default, joined by four valid edges (one
# of each type) and one invalidated edge, through the memory services.
SETUP = """
import json
from django.contrib.auth import get_user_model
from vancetope.memory import graph
from vancetope.memory.documents import create_document
from vancetope.memory.items import Source, write_item
from vancetope.memory.models import EdgeAuthor, EdgeType, SourceKind
from vancetope.memory.scopes import person_reach, person_target
from vancetope.tenancy.services import get_visible_project

user = get_user_model().objects.get(username="local")
target = person_target(user, "project", "proj_default")
source = Source(SourceKind.USER, "local")
leave = write_item(target, "Everyone gets twenty-eight days of leave.", source, key="leave")
office = write_item(target, "The office closes between Christmas and New Year.", source)
badges = write_item(target, "Badges open the printers.", source)
document = create_document(
    get_visible_project(user, "proj_default"),
    "Handbook",
    "# Holidays\\n\\nLeave is twenty-eight days a year.\\n\\n"
    "# Printing\\n\\nPrint with your badge.",
    "text/markdown",
    user,
)
reach = person_reach(user)
node = lambda public_id: graph.get_visible_node(reach, public_id)
holidays, printing = f"{document.public_id}:0", f"{document.public_id}:1"
linker = graph.Author(EdgeAuthor.LINKER, "run_1")
graph.add_edge(EdgeType.SUPPORTS, node(holidays), node(leave.public_id), 0.9, "same days", linker)
graph.add_edge(EdgeType.CONTRADICTS, node(leave.public_id), node(office.public_id), 0.4,
               "closed days are not leave", linker)
graph.add_edge(EdgeType.DERIVED_FROM, node(badges.public_id), node(printing), 0.8,
               "from the handbook", graph.Author(EdgeAuthor.PROCESS, "tp_9"))
graph.add_edge(EdgeType.MENTIONS, node(office.public_id), node(holidays), 0.7, "holidays",
               graph.Author(EdgeAuthor.USER, "local"))
stale = graph.add_edge(EdgeType.MENTIONS, node(badges.public_id), node(leave.public_id), 0.2,
                       "a slip", linker)
graph.invalidate_edge(stale, "wrong")
print(json.dumps({"leave": leave.public_id, "office": office.public_id,
                  "badges": badges.public_id, "document": document.public_id,
                  "holidays": holidays, "printing": printing}))
"""

# An item and a document of two chunks in proj_default, each chunk joined to the item by an
# edge: the document deleted by one test.
ROTA = """
import json
from django.contrib.auth import get_user_model
from vancetope.memory import graph
from vancetope.memory.documents import create_document
from vancetope.memory.items import Source, write_item
from vancetope.memory.models import EdgeAuthor, EdgeType, SourceKind
from vancetope.memory.scopes import person_reach, person_target
from vancetope.tenancy.services import get_visible_project

user = get_user_model().objects.get(username="local")
item = write_item(person_target(user, "project", "proj_default"), "Shifts follow the rota.",
                  Source(SourceKind.USER, "local"))
document = create_document(
    get_visible_project(user, "proj_default"),
    "Rota",
    "# Early\\n\\nThe early shift starts at six.\\n\\n# Late\\n\\nThe late shift ends at ten.",
    "text/markdown",
    user,
)
reach = person_reach(user)
chunks = [f"{document.public_id}:0", f"{document.public_id}:1"]
for chunk, edge_type in zip(chunks, [EdgeType.SUPPORTS, EdgeType.MENTIONS]):
    graph.add_edge(edge_type, graph.get_visible_node(reach, chunk),
                   graph.get_visible_node(reach, item.public_id), 0.6, "shifts",
                   graph.Author(EdgeAuthor.USER, "local"))
print(json.dumps({"document": document.public_id, "item": item.public_id, "chunks": chunks}))
"""

if not CHROMIUM.exists():
    pytest.skip(
        "browser tests need Debian's Chromium at /usr/bin/chromium", allow_module_level=True
    )
sync_api = pytest.importorskip("playwright.sync_api", reason="browser tests need Playwright")
expect = sync_api.expect
pytestmark = pytest.mark.embedded_brain


@pytest.fixture(scope="module")
def services() -> Iterator[dict[str, str]]:
    with run_services("memory") as found:
        yield found


@pytest.fixture(scope="module")
def brain(tmp_path_factory: pytest.TempPathFactory, services: dict[str, str]) -> Iterator[Brain]:
    var_dir = tmp_path_factory.mktemp("memory-brain")
    env = brain_env(var_dir, **services)
    bootstrap(env)
    manage_shell(
        env,
        "from django.contrib.auth import get_user_model; "
        "user = get_user_model().objects.get(username='local'); "
        f"user.set_password({PASSWORD!r}); user.save()",
    )
    worker = CeleryWorker(env, services["VANCETOPE_TASK_QUEUE"]) if services else None
    running = Brain(env, free_port())
    if services:
        assert running.wait_healthy()["checks"]["broker"]["detail"] == "redis"
    yield running
    running.stop()
    if worker is not None:
        worker.stop()


@pytest.fixture(scope="module")
def made(brain: Brain) -> dict[str, str]:
    return dict(json.loads(manage_shell(brain.env, SETUP).strip().splitlines()[-1]))


@pytest.fixture
def page(brain: Brain, made: dict[str, str], browser: Any) -> Iterator[Any]:
    """A tab of a browser context of its own, logged in, once the module's data is made."""
    tab = open_tab(browser, brain.url, PASSWORD, {"width": 1280, "height": 900})
    expect(tab.locator("h1")).to_have_text("Think processes")
    yield tab
    tab.context.close()


def drawn_edges(page: Any) -> list[tuple[str, str, str]]:
    """The drawn edges as (from, type, to), sorted."""
    found = page.locator("#graph-map .graph-edge").evaluate_all(
        "lines => lines.map(line => [line.dataset.from, line.dataset.type, line.dataset.to])"
    )
    return sorted((start, kind, end) for start, kind, end in found)


def drawn_nodes(page: Any) -> set[str]:
    return set(
        page.locator("#graph-map .graph-node").evaluate_all(
            "groups => groups.map(group => group.dataset.node)"
        )
    )


def edge_types(page: Any) -> list[str]:
    return sorted(
        page.locator("#graph-map .graph-edge").evaluate_all(
            "lines => lines.map(line => line.dataset.type)"
        )
    )


def open_memory_page(page: Any) -> None:
    page.click("nav >> text=Memory")
    expect(page.locator("h1")).to_have_text("Memory")
    expect(page.locator("#graph-map")).to_have_attribute("data-loaded", "true")


def test_the_graph_is_drawn_filtered_by_type_and_a_node_shows_its_text(page, made):
    # given: the memory page, reached from the navigation
    page.goto("/")
    open_memory_page(page)
    # then: the five nodes and the four valid edges are drawn, one colour per type
    nodes = page.locator("#graph-map .graph-node")
    expect(nodes).to_have_count(5)
    expect(page.locator("#graph-map .graph-edge")).to_have_count(4)
    assert edge_types(page) == ["contradicts", "derived_from", "mentions", "supports"]
    colours = {
        "supports": "#1f7a3d",
        "contradicts": "#b3261e",
        "derived_from": "#7c3aed",
        "mentions": "#2456c7",
    }
    for edge_type, colour in colours.items():
        line = page.locator(f"#graph-map .graph-edge[data-type={edge_type}]")
        expect(line).to_have_attribute("stroke", colour)
    kinds = nodes.evaluate_all("groups => groups.map(group => group.dataset.kind)")
    assert sorted(kinds) == ["chunk", "chunk", "item", "item", "item"]
    expect(page.locator("#graph-count")).to_have_text("5 nodes · 4 of 4 edges")
    screenshot(page, "memory-graph")
    # when: contradicts and mentions are filtered out
    page.uncheck("#graph-filters input[value=contradicts]")
    page.uncheck("#graph-filters input[value=mentions]")
    # then: only supports and derived_from edges are drawn; the nodes stay
    expect(page.locator("#graph-map .graph-edge")).to_have_count(2)
    assert edge_types(page) == ["derived_from", "supports"]
    expect(nodes).to_have_count(5)
    # when: they are shown again, and the invalid edges too
    page.check("#graph-filters input[value=contradicts]")
    page.check("#graph-filters input[value=mentions]")
    page.check("#graph-invalid")
    # then: the invalidated edge is drawn dashed
    expect(page.locator("#graph-map .graph-edge")).to_have_count(5)
    invalid = page.locator("#graph-map .graph-edge.invalid")
    expect(invalid).to_have_count(1)
    expect(invalid).to_have_attribute("stroke-dasharray", "6 4")
    expect(invalid).to_have_attribute("data-from", made["badges"])
    page.uncheck("#graph-invalid")
    expect(page.locator("#graph-map .graph-edge")).to_have_count(4)
    # when: the leave item is clicked
    page.locator(f"#graph-map .graph-node[data-node='{made['leave']}']").click()
    # then: its text and its edges, with their other ends, show beside the graph
    detail = page.locator("#graph-detail")
    expect(detail).to_contain_text("Everyone gets twenty-eight days of leave.")
    expect(detail.locator(".graph-edge-row")).to_have_count(2)
    expect(detail).to_contain_text("← supports")
    expect(detail).to_contain_text("Leave is twenty-eight days a year.")
    expect(detail).to_contain_text("contradicts →")
    expect(detail).to_contain_text("linker run_1")
    selected = page.locator("#graph-map .graph-node.selected")
    expect(selected).to_have_attribute("data-node", made["leave"])
    # when: the other end of an edge is followed
    detail.locator(f"a.graph-other[data-node='{made['holidays']}']").click()
    # then: the chunk is shown, with its document's title and heading
    expect(detail.locator("h3")).to_have_text(f"Handbook · {made['holidays']}")
    expect(detail).to_contain_text("document chunk (Holidays)")
    expect(detail.locator(".graph-edge-row")).to_have_count(2)
    screenshot(page, "memory-node")


def test_documents_are_uploaded_and_deleted_from_the_page(page, brain):
    # given: a document of this test's own, each of its two chunks joined to an item by an edge
    rota = json.loads(last_line(manage_shell(brain.env, ROTA)))
    page.goto("/memory/")
    rows = page.locator("#document-list tr[data-document]")
    own = page.locator(f"#document-list tr[data-document='{rota['document']}']")
    expect(own.locator(".chunks")).to_have_text("2")
    listed = rows.count()
    # when: text is pasted
    page.fill("#document-title", "Pasted notes")
    page.fill("#document-text", "# Parking\n\nThe car park opens at seven.")
    page.click("#document-upload")
    # then
    expect(page.locator("#memory-notice")).to_contain_text("Uploaded Pasted notes")
    expect(rows).to_have_count(listed + 1)
    expect(rows.filter(has_text="Pasted notes")).to_have_count(1)
    # when: a Markdown file and a PDF are uploaded
    page.set_input_files(
        "#document-file",
        {"name": "kitchen.md", "mimeType": "text/markdown", "buffer": b"# Kitchen\n\nTea."},
    )
    page.click("#document-upload")
    expect(page.locator("#memory-notice")).to_contain_text("Uploaded kitchen.md")
    pdf = minimal_pdf([["Fire drills are on Fridays."], ["Exits are marked green."]])
    page.set_input_files(
        "#document-file", {"name": "safety.pdf", "mimeType": "application/pdf", "buffer": pdf}
    )
    page.click("#document-upload")
    # then: both are listed, the PDF with one chunk per page
    expect(page.locator("#memory-notice")).to_contain_text("Uploaded safety.pdf")
    expect(rows).to_have_count(listed + 3)
    expect(rows.filter(has_text="kitchen.md")).to_have_count(1)
    safety = page.locator("#document-list tr[data-document]", has_text="safety.pdf")
    expect(safety.locator(".chunks")).to_have_text("2")
    expect(safety).to_contain_text("application/pdf")
    # when: a file that is no PDF is sent as one
    page.set_input_files(
        "#document-file",
        {"name": "fake.pdf", "mimeType": "application/pdf", "buffer": b"not a pdf"},
    )
    page.click("#document-upload")
    # then: the refusal is shown and nothing is added
    expect(page.locator("#memory-notice")).to_contain_text("fake.pdf")
    expect(page.locator("#memory-notice")).to_have_class("notice error")
    expect(rows).to_have_count(listed + 3)
    expect(rows.filter(has_text="fake.pdf")).to_have_count(0)
    screenshot(page, "memory-documents")
    # when: the rota is deleted (the confirmation accepted)
    expect(page.locator(f"#graph-map .graph-edge[data-to='{rota['item']}']")).to_have_count(2)
    edges, nodes = drawn_edges(page), drawn_nodes(page)
    page.once("dialog", lambda dialog: dialog.accept())
    page.click(f"#document-list button[data-delete='{rota['document']}']")
    # then: it leaves the list, and the edges of its chunks leave the graph, with the nodes
    # that had no other edge; every other edge stays
    expect(page.locator("#memory-notice")).to_contain_text("Deleted Rota")
    expect(rows).to_have_count(listed + 2)
    expect(own).to_have_count(0)
    kept = [edge for edge in edges if not {edge[0], edge[2]} & set(rota["chunks"])]
    assert len(kept) == len(edges) - 2
    expect(page.locator("#graph-map .graph-edge")).to_have_count(len(kept))
    assert drawn_edges(page) == kept
    assert drawn_nodes(page) == nodes - {rota["item"], *rota["chunks"]}


def test_the_page_fits_a_phone(page, made):
    # given
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/memory/")
    expect(page.locator("#graph-map")).to_have_attribute("data-loaded", "true")
    # then: the graph fits the width and a node can still be selected
    box = page.locator("#graph-map svg").bounding_box()
    assert box is not None
    assert box["width"] <= 390
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.locator(f"#graph-map .graph-node[data-node='{made['office']}']").click()
    expect(page.locator("#graph-detail")).to_contain_text("The office closes")
    screenshot(page, "memory-phone")
