"""An A2A error of the Brain's own, with a JSON-RPC code of its own, answered alike by the
`a2a-sdk`'s 1.0 dispatcher and its 0.3 adapter (UPSTREAM.md, `a2a_errors.py`).

The SDK answers an A2AError subclass by its code in `JSON_RPC_ERROR_CODE_MAP`, and any class it
does not know as an internal error (-32603). Its 1.0 answer builds the error object of the class
`EXCEPTION_MAP` names (none named: the internal error's, whose code can only be -32603), with the
reason of `A2A_ERROR_REASONS` in its ErrorInfo; its 0.3 adapter answers every code outside the
0.3 protocol's own (`_V03_ERROR_CODES`) as -32603 too. Registering the class in all four makes
both versions answer it with its code."""

from __future__ import annotations

import importlib
from typing import Any

from a2a.server.jsonrpc_models import JSONRPCError
from a2a.server.request_handlers import response_helpers
from a2a.utils.errors import A2A_ERROR_REASONS, JSON_RPC_ERROR_CODE_MAP, A2AError


def register_error(error_type: type[A2AError], code: int, reason: str) -> None:
    """Answer `error_type` as JSON-RPC error `code` (a server-defined one, -32000 to -32099,
    that A2A does not define) with the ErrorInfo reason `reason`, in 1.0 and 0.3 alike."""
    JSON_RPC_ERROR_CODE_MAP[error_type] = code
    A2A_ERROR_REASONS[error_type] = reason
    response_helpers.EXCEPTION_MAP[error_type] = JSONRPCError
    # The SDK's routes first: its 0.3 adapter cannot be imported before them (a cycle).
    importlib.import_module("a2a.server.routes.jsonrpc_dispatcher")
    adapter: Any = importlib.import_module("a2a.compat.v0_3.jsonrpc_adapter")
    adapter._V03_ERROR_CODES = adapter._V03_ERROR_CODES | {code}
