"""Setting and unsetting values at a scope, with the role checks of the README's roles.

`check_*` find the scope the caller names (another tenant's, or one they cannot see, is a 404)
and refuse what their role forbids (403); `do_*` write, raising the settings revision in the
same transaction, so every lane's next lease sees the change.

Who may write: at tenant and group scope the tenant's admins; at project scope the project's
admins (and the tenant's); at session scope the session's owner, except the `operator` keys
(where the Brain connects, with which key, which other models params may name), which need an
admin of the session's project, and a model (llm.model, llm.fallbackModel) the project has not
configured, which needs one too.
Every member of a tenant reads the effective values of the scopes they see; secrets read as
"***".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.db import transaction
from django.utils import timezone

from vancetope.config import keys, secrets
from vancetope.config.cascade import Chain, Effective, effective
from vancetope.config.llm import configured_models, project_settings
from vancetope.config.models import Scope, Setting, SettingsRevision
from vancetope.config.registry import SettingKey, get_key
from vancetope.errors import BadRequest, Forbidden, NotFound
from vancetope.ids import parse_public_id
from vancetope.infra import revisions
from vancetope.tenancy.models import Project, ProjectGroup, Tenant
from vancetope.tenancy.services import (
    AnyUser,
    get_visible_project,
    is_project_admin,
    is_tenant_admin,
    visible_tenants,
)

SCOPES = [str(scope) for scope in Scope]


@dataclass(frozen=True)
class Target:
    """A scope as the caller named it, and the chain a lookup from there climbs."""

    scope: Scope
    scope_id: int
    # How the API spells it: a tenant's slug, `tenant/group`, `proj_x`, `sess_N`.
    public_id: str
    chain: Chain
    # The project of a project or session scope (its admins may write there).
    project: Project | None = None
    session_owner_id: int | None = None
    # The public id of each scope of the chain, by (scope, primary key): what a value's
    # source is called.
    names: tuple[tuple[tuple[str, int], str], ...] = ()

    def name_of(self, scope: str, pk: int | None) -> str | None:
        return dict(self.names).get((scope, pk)) if pk is not None else None


def _names(project: Project, session_id: int | None = None) -> tuple[Any, ...]:
    found: list[tuple[tuple[str, int], str]] = [
        ((Scope.TENANT, project.tenant_id), project.tenant.slug),
        ((Scope.PROJECT, project.pk), project.public_id),
    ]
    if project.group is not None:
        found.append(
            ((Scope.GROUP, project.group.pk), f"{project.tenant.slug}/{project.group.slug}")
        )
    if session_id is not None:
        found.append(((Scope.SESSION, session_id), f"sess_{session_id}"))
    return tuple(found)


def _session_model() -> Any:
    # The kernel names the sessions app's model without importing the app.
    return apps.get_model("brain_sessions", "Session")


def _tenant_target(tenant: Tenant) -> Target:
    names = (((Scope.TENANT, tenant.pk), tenant.slug),)
    return Target(Scope.TENANT, tenant.pk, tenant.slug, Chain(tenant_id=tenant.pk), names=names)


def _group_target(group: ProjectGroup) -> Target:
    chain = Chain(tenant_id=group.tenant_id, group_id=group.pk)
    public_id = f"{group.tenant.slug}/{group.slug}"
    names = (
        ((Scope.TENANT, group.tenant_id), group.tenant.slug),
        ((Scope.GROUP, group.pk), public_id),
    )
    return Target(Scope.GROUP, group.pk, public_id, chain, names=names)


def _project_target(project: Project) -> Target:
    chain = Chain(project.tenant_id, project.group_id, project.pk)
    return Target(
        Scope.PROJECT, project.pk, project.public_id, chain, project=project, names=_names(project)
    )


def _session_target(session: Any) -> Target:
    project = session.project
    chain = Chain(project.tenant_id, project.group_id, project.pk, session.pk)
    return Target(
        Scope.SESSION,
        session.pk,
        f"sess_{session.pk}",
        chain,
        project=project,
        session_owner_id=session.owner_id,
        names=_names(project, session.pk),
    )


def check_target(user: AnyUser, scope: str | None, scope_id: str | None) -> Target:
    """The scope the caller names, if they see it; an unknown scope is a 400, a scope they
    cannot see (another tenant's) a 404."""
    if scope not in SCOPES:
        raise BadRequest(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
    text = str(scope_id or "")
    if scope == Scope.TENANT:
        tenants = visible_tenants(user)
        if not text:
            mine = list(tenants[:2])
            if len(mine) != 1:
                raise BadRequest("scopeId: name the tenant (its slug); you are in several")
            return _tenant_target(mine[0])
        tenant = tenants.filter(slug=text).first()
        if tenant is None:
            raise NotFound(f"tenant {text!r} not found")
        return _tenant_target(tenant)
    if scope == Scope.GROUP:
        tenant_slug, _, group_slug = text.partition("/")
        group = (
            ProjectGroup.objects.filter(
                tenant__in=visible_tenants(user), tenant__slug=tenant_slug, slug=group_slug
            )
            .select_related("tenant")
            .first()
        )
        if group is None:
            raise NotFound(f"project group {text!r} not found (ids look like tenant/group)")
        return _group_target(group)
    if scope == Scope.PROJECT:
        return _project_target(get_visible_project(user, text))
    pk = parse_public_id("sess", text, "session")
    session = (
        _session_model()
        .objects.filter(pk=pk, owner_id=int(user.pk or 0) if user.is_authenticated else None)
        .select_related("project__tenant", "project__group")
        .first()
    )
    if session is None:
        raise NotFound(f"session sess_{pk} not found")
    return _session_target(session)


def check_may_write(user: AnyUser, target: Target, key: SettingKey) -> None:
    """Refuse (403) a write the caller's role does not allow at the target's scope."""
    if target.scope in (Scope.TENANT, Scope.GROUP):
        if not is_tenant_admin(user, target.chain.tenant_id):
            raise Forbidden(f"only admins of the tenant set {key.name} at {target.scope} scope")
        return
    assert target.project is not None
    if target.scope == Scope.PROJECT or key.operator:
        if not is_project_admin(user, target.project):
            raise Forbidden(
                f"only admins of {target.project.public_id} or its tenant set {key.name} "
                f"at {target.scope} scope"
            )


def check_session_model(user: AnyUser, target: Target, key: SettingKey, value: Any) -> None:
    """A member sets llm.model or llm.fallbackModel for their own session only to a model
    configured above it (the project's llm.model, llm.fallbackModel, llm.models): the calls go
    to the operator's or the project's provider with its key, so which models they may cost is
    the admins' choice (403 otherwise)."""
    if target.scope != Scope.SESSION or key not in (keys.MODEL, keys.FALLBACK_MODEL):
        return
    assert target.project is not None
    if is_project_admin(user, target.project):
        return
    configured = configured_models(project_settings(target.project))
    if value == "" or value in configured:
        return
    raise Forbidden(
        f"only admins of {target.project.public_id} or its tenant set {key.name} at session "
        f"scope to a model the project has not configured ({value!r}; configured: "
        f"{', '.join(configured) or 'none'}: llm.model, llm.fallbackModel, llm.models)"
    )


def settings_at(user: AnyUser, scope: str | None, scope_id: str | None) -> tuple[Target, Effective]:
    """Every key's effective value at the scope the caller names."""
    target = check_target(user, scope, scope_id)
    return target, effective(target.chain)


def set_setting(
    user: AnyUser, name: str, scope: str | None, scope_id: str | None, value: Any
) -> tuple[Target, Effective]:
    key = get_key(name)
    target = check_target(user, scope, scope_id)
    check_may_write(user, target, key)
    check_session_model(user, target, key, value)
    do_set(key, target.scope, target.scope_id, target.chain.tenant_id, value, by=user)
    return target, effective(target.chain)


def unset_setting(
    user: AnyUser, name: str, scope: str | None, scope_id: str | None
) -> tuple[Target, Effective]:
    key = get_key(name)
    target = check_target(user, scope, scope_id)
    check_may_write(user, target, key)
    do_unset(key.name, target.scope, target.scope_id)
    return target, effective(target.chain)


def do_set(
    key: SettingKey, scope: str, scope_id: int, tenant_id: int, value: Any, by: Any = None
) -> Setting:
    """Store `value` (checked against the key; a secret encrypted) at the scope, and raise
    the settings revision, in one transaction."""
    value = key.validate(value)
    stored = secrets.encrypt(value) if key.secret else value
    author = by if by is not None and by.is_authenticated else None
    with transaction.atomic():
        row, _ = Setting.objects.update_or_create(
            key=key.name,
            scope=scope,
            scope_id=scope_id,
            defaults={
                "tenant_id": tenant_id,
                "value": stored,
                "updated_at": timezone.now(),
                "updated_by": author,
            },
        )
        raise_revision()
    return row


def do_unset(name: str, scope: str, scope_id: int) -> bool:
    """Remove the value of key `name` set at the scope (the wider scope's applies again);
    False if none was."""
    with transaction.atomic():
        deleted, _ = Setting.objects.filter(key=name, scope=scope, scope_id=scope_id).delete()
        if deleted:
            raise_revision()
    return bool(deleted)


def forget_scope(scope: str, scope_id: int) -> None:
    """Delete every value set at a scope that is gone (its row was deleted)."""
    with transaction.atomic():
        deleted, _ = Setting.objects.filter(scope=scope, scope_id=scope_id).delete()
        if deleted:
            raise_revision()


def copy_scope(scope: str, from_id: int, to_id: int) -> int:
    """Every value set at one scope, set at another of the same kind too (a new thinking
    node's session takes its parent's session settings), in one transaction that raises the
    revision; how many. A value the target has already is kept."""
    rows = Setting.objects.filter(scope=scope, scope_id=from_id)
    taken = set(Setting.objects.filter(scope=scope, scope_id=to_id).values_list("key", flat=True))
    copies = [
        Setting(
            key=row.key,
            scope=scope,
            scope_id=to_id,
            tenant_id=row.tenant_id,
            value=row.value,  # a secret stays the ciphertext it is
            updated_at=timezone.now(),
            updated_by_id=row.updated_by_id,
        )
        for row in rows
        if row.key not in taken
    ]
    if copies:
        with transaction.atomic():
            Setting.objects.bulk_create(copies)
            raise_revision()
    return len(copies)


def raise_revision() -> None:
    """The settings revision + 1 (vancetope/infra/revisions.py)."""
    revisions.raise_revision(SettingsRevision)


def chain_of(scope: str, scope_id: int) -> Chain:
    """The chain above a scope given by primary key (the admin's form); 404 if it is gone."""
    if scope == Scope.TENANT and Tenant.objects.filter(pk=scope_id).exists():
        return Chain(tenant_id=scope_id)
    if scope == Scope.GROUP:
        group = ProjectGroup.objects.filter(pk=scope_id).first()
        if group is not None:
            return _group_target(group).chain
    if scope == Scope.PROJECT:
        project = Project.objects.filter(pk=scope_id).first()
        if project is not None:
            return _project_target(project).chain
    if scope == Scope.SESSION:
        session = _session_model().objects.filter(pk=scope_id).select_related("project").first()
        if session is not None:
            return _session_target(session).chain
    raise NotFound(f"{scope} {scope_id} not found")
