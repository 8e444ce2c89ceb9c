"""Every private name of a library that vancetope/infra/ relies on, as UPSTREAM.md lists them,
is still there and still takes the arguments we pass. An upgrade that removes or renames one
fails here, by name, instead of somewhere in a turn (or, worse, by silently doing nothing: an
override of a method the library no longer calls)."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

import autobahn.twisted.websocket
import autobahn.websocket.protocol
import pytest
from channels.layers import InMemoryChannelLayer
from channels.sessions import InstanceSessionWrapper, SessionMiddleware
from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.base.operations import BaseDatabaseOperations
from django.db.backends.postgresql import base as postgresql
from django.db.backends.sqlite3 import base as sqlite
from django.db.models.base import ModelState
from django.db.models.expressions import Col
from django.db.models.fields import Field
from django.db.models.options import Options
from limits.storage import MemoryStorage
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from processes.models import ThinkProcess
from vancetope.infra import autobahn_logging


def database_wrapper(module: Any) -> Any:
    """A wrapper of that backend, not connected (its attributes are set in __init__)."""
    return module.DatabaseWrapper({**connection.settings_dict}, alias="upstream-check")


def names(label: str, owner: Callable[[], object], *attributes: str) -> list[Any]:
    """One check per attribute `owner()` must have; `label` names the owner as UPSTREAM.md
    does."""
    return [pytest.param(owner, name, id=f"{label}.{name}") for name in attributes]


NAMES = [
    # vancetope/infra/fastsql.py (Django)
    *names(
        "BaseDatabaseWrapper",
        lambda: BaseDatabaseWrapper,
        "queries_logged",
        "close_if_health_check_failed",
        "ensure_connection",
        "create_cursor",
        "validate_no_broken_transaction",
        "wrap_database_errors",
    ),
    *names(
        "BaseDatabaseWrapper()",
        lambda: database_wrapper(sqlite),
        "connection",
        "__dict__",
        "execute_wrappers",
        "needs_rollback",
    ),
    *names("BaseDatabaseOperations", lambda: BaseDatabaseOperations, "quote_name"),
    *names("BaseDatabaseOperations", lambda: BaseDatabaseOperations, "get_db_converters"),
    *names("Field", lambda: Field, "get_col"),
    *names(
        "Field()", lambda: ThinkProcess._meta.get_field("status"), "concrete", "column", "attname"
    ),
    *names("Col", lambda: Col, "get_db_converters"),
    *names("Options", lambda: Options, "concrete_fields"),
    *names("Options()", lambda: ThinkProcess._meta, "auto_field"),
    *names("Field", lambda: Field, "pre_save", "get_default", "get_db_prep_save"),
    *names("Field()", lambda: ThinkProcess._meta.get_field("status"), "default"),
    *names("DateTimeField()", lambda: ThinkProcess._meta.get_field("updated_at"), "auto_now"),
    *names("DateTimeField()", lambda: ThinkProcess._meta.get_field("updated_at"), "auto_now_add"),
    *names("Model()", lambda: ThinkProcess(), "_state"),
    *names("ModelState", lambda: ModelState, "adding", "db"),
    # vancetope/infra/sqlite_backend/base.py
    *names(
        "sqlite3.DatabaseWrapper",
        lambda: sqlite.DatabaseWrapper,
        "_start_transaction_under_autocommit",
        "_commit",
        "_rollback",
        "_close",
        "create_cursor",
    ),
    *names(
        "sqlite3.SQLiteCursorWrapper",
        lambda: sqlite.SQLiteCursorWrapper,
        "convert_query",
        "execute",
        "executemany",
    ),
    # vancetope/infra/postgresql_backend/base.py
    *names(
        "postgresql.DatabaseWrapper",
        lambda: postgresql.DatabaseWrapper,
        "create_cursor",
        "close_if_unusable_or_obsolete",
    ),
    *names(
        "postgresql.DatabaseWrapper()",
        lambda: database_wrapper(postgresql),
        "health_check_done",
        "errors_occurred",
    ),
    # vancetope/infra/channel_layer.py (channels)
    *names(
        "InMemoryChannelLayer",
        lambda: InMemoryChannelLayer,
        "_clean_expired",
        "get_capacity",
        "require_valid_channel_name",
        "require_valid_group_name",
    ),
    *names("InMemoryChannelLayer()", InMemoryChannelLayer, "channels", "groups", "expiry"),
    # vancetope/infra/autobahn_logging.py
    *names("autobahn.websocket.protocol", lambda: autobahn.websocket.protocol, "hltype", "hlval"),
    *names("autobahn.twisted.websocket", lambda: autobahn.twisted.websocket, "hltype", "hlval"),
    # vancetope/infra/websocket_close.py
    *names("daphne Server()", lambda: daphne_server(), "ready_callable"),
    *names(
        "WebSocketServerFactory()",
        lambda: autobahn.twisted.websocket.WebSocketServerFactory(),
        "failByDrop",
        "closeHandshakeTimeout",
    ),
    # vancetope/infra/http_body.py (daphne, Twisted)
    *names("daphne.http_protocol", lambda: daphne_http(), "WebRequest", "HTTPFactory"),
    *names("daphne Server()", lambda: daphne_server(), "ready_callable"),
    # vancetope/infra/ratelimit_memory.py (limits)
    *names(
        "limits.storage.MemoryStorage",
        lambda: MemoryStorage,
        "_MemoryStorage__schedule_expiry",
        "_MemoryStorage__expire_events",
    ),
    *names("MemoryStorage()", lambda: MemoryStorage(), "events"),
    # vancetope/infra/websocket_session.py (channels)
    *names("SessionMiddleware", lambda: SessionMiddleware(None), "inner"),
    *names("InstanceSessionWrapper", lambda: InstanceSessionWrapper, "resolve_session"),
    *names(
        "InstanceSessionWrapper()", lambda: InstanceSessionWrapper({"cookies": {}}, None), "scope"
    ),
    # vancetope/infra/mcp_server.py (mcp)
    *names("MCPServer()", lambda: MCPServer(name="upstream-check"), "_lowlevel_server"),
    # vancetope/infra/mcp_sessions.py (mcp)
    *names(
        "StreamableHTTPSessionManager()",
        lambda: StreamableHTTPSessionManager(app=MCPServer(name="upstream-check")._lowlevel_server),
        "_admit_session",
        "_session_creation_lock",
        "_session_owners",
        "_server_instances",
        "_task_group",
    ),
    *names(
        "StreamableHTTPServerTransport()",
        lambda: StreamableHTTPServerTransport(mcp_session_id="x", idle_timeout=1.0),
        "_requests_in_flight",
        "idle_scope",
    ),
    # vancetope/infra/a2a_errors.py (a2a-sdk)
    *names(
        "a2a.utils.errors",
        lambda: sdk_module("a2a.utils.errors"),
        "JSON_RPC_ERROR_CODE_MAP",
        "A2A_ERROR_REASONS",
    ),
    *names(
        "response_helpers",
        lambda: sdk_module("a2a.server.request_handlers.response_helpers"),
        "EXCEPTION_MAP",
    ),
    *names(
        "jsonrpc_adapter",
        lambda: sdk_module("a2a.compat.v0_3.jsonrpc_adapter"),
        "_V03_ERROR_CODES",
        "_to_v03_jsonrpc_error",
    ),
]


def sdk_module(name: str) -> Any:
    """An a2a-sdk module, imported after its routes (its 0.3 adapter cannot come first)."""
    importlib.import_module("a2a.server.routes.jsonrpc_dispatcher")
    return importlib.import_module(name)


def daphne_server() -> Any:
    from daphne.server import Server

    return Server(application=None, endpoints=["tcp:port=0"])


def daphne_http() -> Any:
    from daphne import http_protocol

    return http_protocol


def test_twisteds_request_takes_the_switch_that_turns_form_parsing_off():
    from twisted.web.http import Request

    assert "parsePOSTFormSubmission" in inspect.signature(Request.__init__).parameters


def test_daphnes_run_makes_the_http_factory_whose_protocols_get_the_request_class():
    from daphne.http_protocol import HTTPFactory
    from daphne.server import Server

    assert "self.http_factory = " in inspect.getsource(Server.run)
    assert "protocol.requestFactory = " in inspect.getsource(HTTPFactory.buildProtocol)


def test_daphnes_run_makes_the_websocket_factory_the_close_option_is_set_on():
    from daphne.server import Server

    assert "self.ws_factory = " in inspect.getsource(Server.run)


@pytest.mark.parametrize(("owner", "name"), NAMES)
def test_a_private_name_we_rely_on_is_still_there(owner: Callable[[], object], name: str):
    assert hasattr(owner(), name)


def call(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """A check that `function` (taken from a class: self comes first) still takes the
    arguments we pass it."""
    where = f"{function.__module__}.{function.__qualname__}"
    label = f"{where}({', '.join([*map(repr, args), *kwargs])})"
    return pytest.param(function, args, kwargs, id=label)


CALLS = [
    # fastsql
    call(BaseDatabaseWrapper.close_if_health_check_failed),
    call(BaseDatabaseOperations.quote_name, "id"),
    call(BaseDatabaseOperations.get_db_converters, None),
    call(Field.get_col, "table"),
    call(Col.get_db_converters, None),
    # sqlite_backend
    call(sqlite.DatabaseWrapper._start_transaction_under_autocommit),  # type: ignore[attr-defined]
    call(sqlite.DatabaseWrapper._commit),  # type: ignore[attr-defined]
    call(sqlite.DatabaseWrapper._rollback),  # type: ignore[attr-defined]
    call(sqlite.DatabaseWrapper._close),  # type: ignore[attr-defined]
    call(sqlite.DatabaseWrapper.create_cursor, name=None),
    call(sqlite.SQLiteCursorWrapper.convert_query, "q"),
    call(sqlite.SQLiteCursorWrapper.convert_query, "q", param_names=["a"]),
    call(sqlite.SQLiteCursorWrapper.execute, "q", None),
    call(sqlite.SQLiteCursorWrapper.executemany, "q", []),
    # postgresql_backend
    call(postgresql.DatabaseWrapper.create_cursor, name=None),
    call(postgresql.DatabaseWrapper.close_if_unusable_or_obsolete),
    # channel_layer
    call(InMemoryChannelLayer._clean_expired),
    # ratelimit_memory
    call(MemoryStorage._MemoryStorage__schedule_expiry),  # type: ignore[attr-defined]
    call(MemoryStorage._MemoryStorage__expire_events),  # type: ignore[attr-defined]
    call(InMemoryChannelLayer.get_capacity, "c"),
    call(InMemoryChannelLayer.require_valid_channel_name, "c"),
    call(InMemoryChannelLayer.require_valid_group_name, "g"),
]


@pytest.mark.parametrize(("function", "args", "kwargs"), CALLS)
def test_a_private_callable_we_rely_on_still_takes_our_arguments(
    function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
):
    inspect.signature(function).bind(object(), *args, **kwargs)


def test_model_from_db_still_takes_alias_field_names_and_values():
    inspect.signature(ThinkProcess.from_db).bind("default", ("id",), [1])


@pytest.mark.django_db
def test_every_converter_of_a_column_takes_value_expression_and_connection():
    # fastsql calls a field's converters itself, as the ORM's compiler does
    for field in ThinkProcess._meta.concrete_fields:
        expression = field.get_col(ThinkProcess._meta.db_table)
        converters = connection.ops.get_db_converters(expression)
        for converter in [*converters, *expression.get_db_converters(connection)]:
            inspect.signature(converter).bind(None, expression, connection)


async def test_the_in_memory_layer_queues_messages_as_expiry_and_message_pairs():
    # ThreadSafeInMemoryChannelLayer puts (expires at, message) into channels' queues, where
    # channels' receive and _clean_expired read them
    layer = InMemoryChannelLayer(expiry=60)
    await layer.send("c", {"type": "x"})
    [(expires_at, message)] = list(layer.channels["c"]._queue)
    assert isinstance(expires_at, float)
    assert message == {"type": "x"}
    await layer.group_add("g", "c")
    assert isinstance(layer.groups["g"]["c"], float)


def test_the_in_memory_layer_changes_groups_without_a_suspension_point():
    # ThreadSafeInMemoryChannelLayer holds a thread lock across channels' group_add and
    # group_discard: safe only while they do not await
    for method in (InMemoryChannelLayer.group_add, InMemoryChannelLayer.group_discard):
        assert "await" not in inspect.getsource(method), method.__qualname__


def test_autobahns_log_argument_helpers_take_any_arguments_and_hand_the_value_back():
    value = object()
    assert autobahn_logging.as_is(value, color="x", bold=True) is value
    assert autobahn_logging.as_is(value, "yellow") is value
    assert autobahn_logging.as_is() is None


def test_the_autobahn_patch_reports_the_names_it_replaced(monkeypatch):
    # given: the helpers as they are (restored afterwards)
    for module_name, names in autobahn_logging.PATCHED.items():
        module = __import__(module_name, fromlist=["_"])
        for name in names:
            monkeypatch.setattr(module, name, getattr(module, name))
    # when
    replaced = autobahn_logging.plain_autobahn_log_arguments()
    # then: every helper of every module was there and is now the pass-through
    assert replaced == [
        "autobahn.websocket.protocol.hltype",
        "autobahn.websocket.protocol.hlval",
        "autobahn.twisted.websocket.hltype",
        "autobahn.twisted.websocket.hlval",
    ]
    assert autobahn.websocket.protocol.hltype is autobahn_logging.as_is
    assert autobahn.twisted.websocket.hlval is autobahn_logging.as_is


def test_channels_session_wrapper_saves_and_sets_cookies_on_http_answers_only():
    # vancetope/infra/websocket_session.py hands WebSocket frames past the wrapper: safe while
    # the wrapper does nothing for any WebSocket message
    for types in (
        InstanceSessionWrapper.save_message_types,
        InstanceSessionWrapper.cookie_response_message_types,
    ):
        assert [kind for kind in types if not kind.startswith("http.")] == []
