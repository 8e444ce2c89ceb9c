"""Who reaches which memory: the scopes a reader sees, and the scope a writer may write.

A reader is a person (REST) or a process (its session, project, group and tenant). A person
sees tenant items of their tenants, group items of their projects' groups, project items of
their projects and session items of their own sessions; another tenant's items are never in
any filter, so they can be neither read, searched, listed nor inferred (a foreign id is a 404).

The kernel knows sessions only by id: the sessions app answers which session a person owns (the
`session_wanted` signal of vancetope/memory/signals.py), so this kernel imports no app.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from django.db.models import Q

from vancetope.errors import BadRequest, Forbidden, NotFound
from vancetope.ids import parse_public_id
from vancetope.memory import signals
from vancetope.memory.models import MemoryItem, Scope
from vancetope.tenancy.models import Project, ProjectGroup, Tenant
from vancetope.tenancy.services import (
    AnyUser,
    get_visible_project,
    is_tenant_admin,
    require_project_admin,
    visible_project_rows,
    visible_projects,
    visible_tenant_ids,
    visible_tenants,
)


@dataclass(frozen=True)
class SessionRef:
    pk: int
    project_id: int
    owner_id: int


def find_session(user: AnyUser, session_id: str) -> SessionRef:
    pk = parse_public_id("sess", session_id, "session")
    answers = signals.session_wanted.send(SessionRef, user=user, session_pk=pk)
    found = next((cast(SessionRef, ref) for _receiver, ref in answers if ref is not None), None)
    if found is None:
        raise NotFound(f"session {session_id!r} not found")
    return found


@dataclass(frozen=True)
class Reach:
    """The scopes a reader sees. `session_ref` is the narrowest (a lookup starts there)."""

    tenant_ids: frozenset[int]
    group_ids: frozenset[int] = frozenset()
    project_ids: frozenset[int] = frozenset()
    session_refs: frozenset[int] = frozenset()
    # A person also sees the session items of their own sessions in these projects.
    owner_id: int | None = None
    owner_project_ids: frozenset[int] = field(default_factory=frozenset)

    def q(self, prefix: str = "") -> Q:
        """The rows (items or passages) this reach sees."""
        session = Q(**{f"{prefix}session_ref__in": self.session_refs})
        if self.owner_id is not None:
            session |= Q(
                **{f"{prefix}owner_id": self.owner_id},
                **{f"{prefix}project_id__in": self.owner_project_ids},
            )
        return (
            Q(**{f"{prefix}scope": Scope.TENANT, f"{prefix}tenant_id__in": self.tenant_ids})
            | Q(**{f"{prefix}scope": Scope.GROUP, f"{prefix}group_id__in": self.group_ids})
            | Q(**{f"{prefix}scope": Scope.PROJECT, f"{prefix}project_id__in": self.project_ids})
            | (Q(**{f"{prefix}scope": Scope.SESSION}) & session)
        )


def project_reach(project: Project, session_pk: int | None = None) -> Reach:
    """What a process (or a lookup from one project or session) sees."""
    return Reach(
        tenant_ids=frozenset({project.tenant_id}),
        group_ids=frozenset({project.group_id}) if project.group_id else frozenset(),
        project_ids=frozenset({project.pk}),
        session_refs=frozenset({session_pk}) if session_pk else frozenset(),
    )


def person_reach(
    user: AnyUser, *, project: str = "", session: str = "", own_sessions: bool = True
) -> Reach:
    """What a person sees: everything visible to them, or from one project or session of
    theirs upwards (a project or session they do not see is a 404). `own_sessions`: with the
    session items of their own sessions (a lookup from a project starts at the project)."""
    if session:
        ref = find_session(user, session)
        return project_reach(Project.objects.get(pk=ref.project_id), ref.pk)
    if project:
        found = get_visible_project(user, project)
        reach = project_reach(found)
        return Reach(
            tenant_ids=reach.tenant_ids,
            group_ids=reach.group_ids,
            project_ids=reach.project_ids,
            owner_id=int(user.pk or 0) if own_sessions else None,
            owner_project_ids=reach.project_ids,
        )
    projects = visible_project_rows(user)
    tenants = visible_tenant_ids(user)
    return Reach(
        tenant_ids=frozenset(tenants | {tenant for _, _, tenant in projects}),
        group_ids=frozenset(group for _, group, _ in projects if group),
        project_ids=frozenset(pk for pk, _, _ in projects),
        owner_id=int(user.pk or 0),
        owner_project_ids=frozenset(pk for pk, _, _ in projects),
    )


@dataclass(frozen=True)
class Target:
    """Where a write goes: the scope and the rows it names."""

    scope: Scope
    tenant: Tenant
    group: ProjectGroup | None = None
    project: Project | None = None
    session_ref: int | None = None
    owner_id: int | None = None


def target_from_project(
    writer: AnyUser, scope: Scope, project: Project, session_pk: int | None
) -> Target:
    """The scope `scope` above `project` (and the session, for a session item); tenant and
    group items need an admin of the tenant."""
    if scope == Scope.SESSION:
        if session_pk is None:
            raise BadRequest("scope session needs a session")
        return Target(
            scope,
            project.tenant,
            project=project,
            session_ref=session_pk,
            owner_id=int(writer.pk or 0),
        )
    if scope == Scope.PROJECT:
        return Target(scope, project.tenant, project=project)
    if not is_tenant_admin(writer, project.tenant_id):
        raise Forbidden(f"only admins of tenant {project.tenant.slug!r} write {scope} memory")
    if scope == Scope.GROUP:
        if project.group is None:
            raise BadRequest(f"project {project.public_id} is in no project group")
        return Target(scope, project.tenant, group=project.group)
    return Target(scope, project.tenant)


def check_may_change(user: AnyUser, item: MemoryItem) -> None:
    """A person changes (supersedes, invalidates) an item they see only where they may
    write: their own session's, a project's as its admin, and a group's or tenant's as a
    tenant admin. Members of a project read its memory."""
    scope, tenant_id = item.scope, item.tenant_id
    if scope == Scope.SESSION and item.owner_id != user.pk:
        raise Forbidden("only the session's owner changes its memory")
    if scope == Scope.PROJECT and item.project is not None:
        require_project_admin(user, item.project, "change project memory")
    if scope in (Scope.GROUP, Scope.TENANT) and not is_tenant_admin(user, tenant_id):
        raise Forbidden(f"only admins of the tenant change {scope} memory")


def person_target(user: AnyUser, scope: str, scope_id: str) -> Target:
    """Where a person's write goes: scopeId is a sess_ id, a proj_ id, a grp_ id or the
    tenant's slug (may be omitted for the tenant: the caller's, if they have one)."""
    try:
        wanted = Scope(scope)
    except ValueError:
        raise BadRequest(f"scope must be one of {', '.join(Scope.values)}") from None
    if not scope_id and wanted == Scope.PROJECT:
        # As for the tenant: a person in exactly one project need not name it.
        only = list(visible_projects(user)[:2])
        if len(only) == 1:
            require_project_admin(user, only[0], "write project memory")
            return Target(wanted, only[0].tenant, project=only[0])
    if not scope_id and wanted != Scope.TENANT:
        example = {"session": "sess_…", "project": "proj_…", "group": "grp_…"}[wanted]
        raise BadRequest(f"scopeId: required for scope {wanted} (a {example} id)")
    if wanted == Scope.SESSION:
        ref = find_session(user, scope_id)
        project = Project.objects.select_related("tenant", "group").get(pk=ref.project_id)
        return target_from_project(user, wanted, project, ref.pk)
    if wanted == Scope.PROJECT:
        project = get_visible_project(user, scope_id)
        require_project_admin(user, project, "write project memory")
        return Target(wanted, project.tenant, project=project)
    if wanted == Scope.GROUP:
        pk = parse_public_id("grp", scope_id, "project group")
        group = ProjectGroup.objects.filter(pk=pk, projects__in=visible_projects(user)).first()
        if group is None:
            raise NotFound(f"project group {scope_id!r} not found")
        if not is_tenant_admin(user, group.tenant_id):
            raise Forbidden(f"only admins of tenant {group.tenant.slug!r} write group memory")
        return Target(wanted, group.tenant, group=group)
    tenants = visible_tenants(user)
    tenant = tenants.filter(slug=scope_id).first() if scope_id else None
    if tenant is None and not scope_id and tenants.count() == 1:
        tenant = tenants.first()
    if tenant is None:
        raise NotFound(f"tenant {scope_id!r} not found")
    if not is_tenant_admin(user, tenant.pk):
        raise Forbidden(f"only admins of tenant {tenant.slug!r} write tenant memory")
    return Target(wanted, tenant)
