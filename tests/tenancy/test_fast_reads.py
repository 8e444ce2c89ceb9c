"""The statements built once for a REST call's token and reach answer what the ORM answers."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser

from tests.support.tenancy import Tenancy
from vancetope.tenancy.models import (
    ApiToken,
    Project,
    ProjectMembership,
    Role,
    Tenant,
    TenantMembership,
)
from vancetope.tenancy.services import (
    authenticate_token_with_id,
    revoke_token,
    visible_project_rows,
    visible_projects,
    visible_tenant_ids,
    visible_tenants,
)

pytestmark = pytest.mark.django_db


def test_visible_rows_are_the_querysets_rows_for_members_admins_and_strangers(
    alice: Tenancy, bob: Tenancy
) -> None:
    # given: carol administers alice's tenant, is a plain member of bob's tenant and of one of
    # its projects, and dave belongs nowhere
    users = get_user_model()
    carol = users.objects.create_user("carol")
    dave = users.objects.create_user("dave")
    second = Project.objects.create(tenant=alice.tenant, slug="alice-two", name="Second")
    TenantMembership.objects.create(user=carol, tenant=alice.tenant, role=Role.ADMIN)
    TenantMembership.objects.create(user=carol, tenant=bob.tenant, role=Role.MEMBER)
    ProjectMembership.objects.create(user=carol, project=bob.project)
    Project.objects.create(tenant=bob.tenant, slug="bob-hidden", name="Hidden")
    Tenant.objects.create(slug="empty", name="Empty")
    # when / then
    for user in (alice.user, bob.user, carol, dave, AnonymousUser()):
        expected = set(visible_projects(user).values_list("pk", "group_id", "tenant_id"))
        assert set(visible_project_rows(user)) == expected
        assert visible_tenant_ids(user) == set(visible_tenants(user).values_list("pk", flat=True))
    assert {pk for pk, _, _ in visible_project_rows(carol)} == {
        alice.project.pk,
        second.pk,
        bob.project.pk,
    }


def test_a_token_authenticates_its_active_user_until_revoked(alice: Tenancy) -> None:
    # given
    token = ApiToken.objects.get(user=alice.user)
    # when
    found = authenticate_token_with_id(alice.token)
    # then
    assert found is not None
    assert found[0] == alice.user
    assert found[0].get_username() == "user-alice"
    assert found[1] == token.pk
    assert authenticate_token_with_id(alice.token + "x") is None
    assert authenticate_token_with_id("") is None
    # when the user is deactivated, then the token no longer authenticates
    users = get_user_model()
    users.objects.filter(pk=alice.user.pk).update(is_active=False)
    assert authenticate_token_with_id(alice.token) is None
    users.objects.filter(pk=alice.user.pk).update(is_active=True)
    # when it is revoked, then neither
    revoke_token(token.pk)
    assert authenticate_token_with_id(alice.token) is None
