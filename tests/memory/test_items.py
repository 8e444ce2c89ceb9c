"""Memory items over REST: the scope cascade, supersede and invalidate, tenant isolation."""

from __future__ import annotations

from typing import Any

import pytest

from sessions_app.models import Session
from tests.support.tenancy import Tenancy
from vancetope.memory.models import MemoryItem
from vancetope.tenancy.models import ProjectGroup

pytestmark = pytest.mark.django_db(transaction=True)


def write(tenancy: Tenancy, scope: str, scope_id: str, content: str, key: str = "lang") -> Any:
    answer = tenancy.api().post(
        "/api/memory",
        {"scope": scope, "scopeId": scope_id, "key": key, "content": content},
        format="json",
    )
    assert answer.status_code == 201, answer.json()
    return answer.json()


def lookup(tenancy: Tenancy, **where: str) -> Any:
    answer = tenancy.api().get("/api/memory/lookup", {"key": "lang", **where})
    assert answer.status_code == 200, answer.json()
    return answer.json()


def test_session_item_shadows_project_item_which_shadows_tenant_item(
    alice: Tenancy, session: Session
) -> None:
    # given
    write(alice, "tenant", "", "English")
    write(alice, "project", alice.project_id, "German")
    narrow = write(alice, "session", session.public_id, "French")
    # when
    from_session = lookup(alice, session=session.public_id)
    from_project = lookup(alice, project=alice.project_id)
    # then
    assert (from_session["scope"], from_session["item"]["content"]) == ("session", "French")
    assert from_session["item"]["source"] == {"kind": "user", "id": "user-alice"}
    assert (from_project["scope"], from_project["item"]["content"]) == ("project", "German")
    assert narrow["scopeId"] == session.public_id


def test_deleting_the_narrower_item_shows_the_wider_one(alice: Tenancy, session: Session) -> None:
    # given
    write(alice, "tenant", "", "English")
    project_item = write(alice, "project", alice.project_id, "German")
    session_item = write(alice, "session", session.public_id, "French")
    # when
    assert alice.api().delete(f"/api/memory/{session_item['id']}").status_code == 200
    after_one = lookup(alice, session=session.public_id)
    alice.api().delete(f"/api/memory/{project_item['id']}")
    after_two = lookup(alice, session=session.public_id)
    # then
    assert (after_one["scope"], after_one["item"]["content"]) == ("project", "German")
    assert (after_two["scope"], after_two["item"]["content"]) == ("tenant", "English")
    kept = MemoryItem.objects.get(pk=int(session_item["id"].removeprefix("mem_")))
    assert kept.valid_to is not None  # invalidated, not deleted


def test_a_second_value_of_a_key_supersedes_the_first_and_keeps_it(alice: Tenancy) -> None:
    # given
    first = write(alice, "project", alice.project_id, "German")
    # when
    second = write(alice, "project", alice.project_id, "Dutch")
    # then
    old = alice.api().get(f"/api/memory/{first['id']}").json()
    assert old["validTo"] is not None
    assert old["supersededBy"] == second["id"]
    assert lookup(alice, project=alice.project_id)["item"]["id"] == second["id"]
    listed = alice.api().get("/api/memory", {"includeInvalid": "true"}).json()
    assert {row["id"] for row in listed["results"]} == {first["id"], second["id"]}


def test_writing_the_same_memory_twice_keeps_one_valid_item(alice: Tenancy) -> None:
    # given
    first = write(alice, "project", alice.project_id, "Meetings are on Tuesdays", key="")
    # when
    again = write(alice, "project", alice.project_id, "Meetings are on Tuesdays", key="")
    # then
    assert again["id"] == first["id"]
    assert again["validTo"] is None
    assert MemoryItem.objects.filter(valid_to__isnull=True).count() == 1


def test_patch_makes_a_new_version(alice: Tenancy) -> None:
    # given
    item = write(alice, "project", alice.project_id, "German")
    # when
    answer = alice.api().patch(
        f"/api/memory/{item['id']}", {"content": "Swiss German"}, format="json"
    )
    # then
    assert answer.status_code == 200
    assert answer.json()["content"] == "Swiss German"
    assert answer.json()["id"] != item["id"]


def test_a_change_to_an_old_version_is_a_409_and_changes_nothing(alice: Tenancy) -> None:
    # given an item and its newer version
    item = write(alice, "project", alice.project_id, "German")
    newer = alice.api().patch(f"/api/memory/{item['id']}", {"content": "Swiss"}, format="json")
    # when the old version is changed
    answer = alice.api().patch(f"/api/memory/{item['id']}", {"content": "Dutch"}, format="json")
    # then it is a conflict naming the item, and the newer version is still the valid one
    assert answer.status_code == 409
    assert item["id"] in answer.json()["message"]
    valid = MemoryItem.objects.filter(valid_to__isnull=True)
    assert [row.content for row in valid] == ["Swiss"]
    assert valid.get().public_id == newer.json()["id"]


def test_a_key_must_be_text_not_a_number(alice: Tenancy) -> None:
    # when an item is written with a number for its key
    answer = alice.api().post(
        "/api/memory",
        {"scope": "project", "scopeId": alice.project_id, "content": "x", "key": 0},
        format="json",
    )
    # then it is refused, naming the key, and nothing is stored
    assert answer.status_code == 400
    assert answer.json()["field"] == "key"
    assert not MemoryItem.objects.exists()


def test_a_tag_must_be_text_not_a_number(alice: Tenancy) -> None:
    # when an item is written with a number for a tag
    answer = alice.api().post(
        "/api/memory",
        {"scope": "project", "scopeId": alice.project_id, "content": "x", "tags": [0]},
        format="json",
    )
    # then it is refused, naming the tags, and nothing is stored
    assert answer.status_code == 400
    assert answer.json()["field"] == "tags.0"
    assert "must be text" in answer.json()["message"]
    assert not MemoryItem.objects.exists()


def test_a_member_who_is_no_tenant_admin_cannot_write_tenant_memory(alice: Tenancy) -> None:
    # given
    alice.tenant.memberships.update(role="member")
    # when
    answer = alice.api().post(
        "/api/memory", {"scope": "tenant", "content": "x", "key": "k"}, format="json"
    )
    # then
    assert answer.status_code == 403
    assert not MemoryItem.objects.exists()


def test_another_tenants_user_can_neither_read_list_look_up_nor_search(
    alice: Tenancy, bob: Tenancy, session: Session
) -> None:
    # given
    items = [
        write(alice, "tenant", "", "English secret"),
        write(alice, "project", alice.project_id, "German secret"),
        write(alice, "session", session.public_id, "French secret"),
    ]
    bob_api = bob.api()
    # when / then
    for item in items:
        assert bob_api.get(f"/api/memory/{item['id']}").status_code == 404
        assert bob_api.delete(f"/api/memory/{item['id']}").status_code == 404
        assert (
            bob_api.patch(f"/api/memory/{item['id']}", {"content": "x"}, format="json").status_code
            == 404
        )
    assert bob_api.get("/api/memory").json()["count"] == 0
    assert (
        bob_api.get("/api/memory/lookup", {"key": "lang", "project": alice.project_id}).status_code
        == 404
    )
    assert (
        bob_api.get("/api/memory/lookup", {"key": "lang", "session": session.public_id}).status_code
        == 404
    )
    assert bob_api.get("/api/memory/search", {"q": "secret", "mode": "lexical"}).json() == {
        "results": []
    }
    assert bob_api.get("/api/memory/search", {"q": "secret"}).json() == {"results": []}
    assert (
        bob_api.post(
            "/api/memory",
            {"scope": "project", "scopeId": alice.project_id, "content": "x"},
            format="json",
        ).status_code
        == 404
    )
    assert (
        len(
            alice.api()
            .get("/api/memory/search", {"q": "secret", "mode": "lexical"})
            .json()["results"]
        )
        == 3
    )


def test_a_member_who_is_no_tenant_admin_can_neither_change_nor_delete_a_tenant_item(
    alice: Tenancy,
) -> None:
    # given
    item = write(alice, "tenant", "", "English")
    alice.tenant.memberships.update(role="member")
    api = alice.api()
    # when
    patched = api.patch(f"/api/memory/{item['id']}", {"content": "Klingon"}, format="json")
    deleted = api.delete(f"/api/memory/{item['id']}")
    # then
    assert (patched.status_code, deleted.status_code) == (403, 403)
    assert lookup(alice, project=alice.project_id)["item"]["content"] == "English"


def test_a_group_item_sits_between_the_project_and_the_tenant(alice: Tenancy) -> None:
    # given
    group = ProjectGroup.objects.create(tenant=alice.tenant, slug="team", name="Team")
    alice.project.group = group
    alice.project.save()
    write(alice, "tenant", "", "English")
    group_item = write(alice, "group", f"grp_{group.pk}", "Danish")
    # when
    found = lookup(alice, project=alice.project_id)
    # then
    assert (found["scope"], found["item"]["content"]) == ("group", "Danish")
    assert group_item["scopeId"] == f"grp_{group.pk}"


def test_a_person_in_one_project_may_leave_out_its_id_and_a_missing_session_id_is_a_400(
    alice: Tenancy,
) -> None:
    # when a project item is written without naming the caller's only project
    item = write(alice, "project", "", "Dutch")
    # then it lives in that project
    assert item["scope"] == "project"
    assert item["scopeId"] == alice.project_id
    # and a session item without its session is refused naming the field, writing nothing
    before = MemoryItem.objects.count()
    answer = alice.api().post(
        "/api/memory", {"scope": "session", "key": "lang", "content": "Welsh"}, format="json"
    )
    assert answer.status_code == 400
    assert answer.json()["message"].startswith("scopeId: required for scope session")
    assert MemoryItem.objects.count() == before
