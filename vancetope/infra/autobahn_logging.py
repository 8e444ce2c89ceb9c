"""autobahn (daphne's WebSocket library) builds the arguments of its debug log lines, a
qualified name via inspect and click colours, for every frame it sends and receives, whether
debug logging is on or not: about a tenth of the server loop's time in a chat. Its helpers for
that (`hltype`, `hlval`, named in UPSTREAM.md) are replaced by one that hands the value to the
log as it is, whatever arguments they are called with.
"""

from __future__ import annotations

from typing import Any

# The modules that bind the helpers at import, and the helper names replaced in each.
PATCHED = {
    "autobahn.websocket.protocol": ("hltype", "hlval"),
    "autobahn.twisted.websocket": ("hltype", "hlval"),
}


def as_is(value: object = None, *args: Any, **kwargs: Any) -> object:
    return value


def plain_autobahn_log_arguments() -> list[str]:
    """Replace the helpers; returns the names replaced ("module.name"). A module or name that
    is missing (another ASGI server, a renamed helper) is skipped: the patch only saves time."""
    import importlib

    replaced = []
    for module_name, names in PATCHED.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for name in names:
            if hasattr(module, name):
                setattr(module, name, as_is)
                replaced.append(f"{module_name}.{name}")
    return replaced
