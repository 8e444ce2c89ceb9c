"""Making the session of a new node: its own Session and chat process, opened through the
session service every client uses, in the project. It joins the standing composition of the node
it branches from: that session's client type, fingerprint, chat recipe, session-scope settings
(e.g. `llm.model`) and registered client tools. Nothing of that node's conversation is
copied."""

from __future__ import annotations

from collections.abc import Iterable

from processes.actions.sessions import close_session, create_session
from processes.models import ThinkProcess
from sessions_app.models import Session
from sessions_app.services import FingerprintData
from spaces.models import ThinkingNode, ThinkingSpace
from vancetope.config.models import Scope
from vancetope.config.services import copy_scope

# The key in a node's chat process's engine_params that names its node: the lane wires the
# node's prompt context and the end of its turns by it, at no cost for any other process.
NODE_MARKER = "thinkingNode"


def open_node_session(space: ThinkingSpace, like: ThinkingNode) -> Session:
    template = Session.objects.get(pk=like.session_id)
    recipe = (
        ThinkProcess.objects.filter(pk=like.chat_process_id)
        .values_list("recipe_name", flat=True)
        .first()
    )
    session = create_session(
        space.owner,
        client_type=template.client_type,
        project_id=space.project.public_id,
        fingerprint=FingerprintData(
            machine_id=template.machine_id,
            working_dir=template.working_dir,
            user_home=template.user_home,
            os_user=template.os_user,
        ),
        recipe=recipe or "arthur",
        tools=template.client_tools,
    )
    # Before the node's first turn: its chat process has only started (no LLM call yet).
    copy_scope(Scope.SESSION, template.pk, session.pk)
    return session


def dispose(sessions: Iterable[Session]) -> None:
    """The sessions of nodes a refused mutation did not create after all."""
    for session in sessions:
        close_session(session.pk)


def mark_chat_process(node: ThinkingNode) -> None:
    """Name the node in its chat process's engine_params (inside the mutation's transaction)."""
    process = ThinkProcess.objects.get(pk=node.chat_process_id)
    params = {**process.engine_params, NODE_MARKER: node.public_id}
    ThinkProcess.objects.filter(pk=process.pk).update(engine_params=params)
