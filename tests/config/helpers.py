"""Setting values in tests, through the services every interface uses, and a ford chat to
see which provider, model and key a turn used."""

from __future__ import annotations

from typing import Any

from processes.actions import steer
from processes.actions.sessions import create_session
from processes.models import ConversationMessage, ThinkProcess
from processes.states import Status
from sessions_app.models import Session
from sessions_app.services import FingerprintData
from tests.support.tenancy import Tenancy
from tests.support.waiting import wait_until
from vancetope.config import services
from vancetope.config.models import Scope
from vancetope.config.registry import get_key
from vancetope.tenancy.models import Project


def set_value(name: str, scope: Scope, row: Any, value: Any) -> None:
    """Store `value` for key `name` at the scope of `row` (a tenant, group, project or
    session) as an operator would (no role check)."""
    chain = services.chain_of(scope, row.pk)
    services.do_set(get_key(name), scope, row.pk, chain.tenant_id, value)


def unset_value(name: str, scope: Scope, row: Any) -> None:
    services.do_unset(name, scope, row.pk)


def ford_session(tenancy: Tenancy, project: Project | None = None) -> Session:
    return create_session(
        tenancy.user,
        client_type="cli",
        project_id=(project or tenancy.project).public_id,
        fingerprint=FingerprintData(machine_id="m-1", working_dir="/work"),
        recipe="ford",
    )


def answers(process_id: int) -> list[str]:
    rows = ConversationMessage.objects.filter(process_id=process_id, role="assistant")
    return list(rows.order_by("index").values_list("content", flat=True))


def chat(session: Session, text: str) -> str:
    """Send `text` and wait for its answer (the process back IDLE with it)."""
    chat_id = session.chat_process_id
    assert chat_id is not None
    before = len(answers(chat_id))
    steer.send_chat(session.pk, text)

    def answered() -> list[str] | None:
        row = ThinkProcess.objects.get(pk=chat_id)
        found = answers(chat_id)
        idle = row.status == Status.IDLE and not row.lease_owner
        return found if idle and len(found) > before else None

    found = wait_until(answered)
    assert found is not None
    return found[-1]


def put(tenancy: Tenancy, key: str, scope: str, scope_id: str, value: Any) -> Any:
    body = {"scope": scope, "scopeId": scope_id, "value": value}
    return tenancy.api().put(f"/api/settings/{key}", body, format="json")
