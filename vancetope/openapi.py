"""What the OpenAPI document says of every operation at once, added after drf-spectacular built
it (a postprocessing hook): rules the server keeps for every input, stated where a client and a
generator of requests (schemathesis) read them.

No text a client sends may contain a NUL character (vancetope/jsonbody.py: no database stores
one; the server answers 400 naming the field). Every string the document declares, in a body or
a parameter, gets a `pattern` that excludes it, and every object with free-form keys a
`propertyNames` with the same pattern. Inside free-form values (a workflow's inputs, an inbox
answer) the same rule holds at any depth; the document says so in its description.
"""

from __future__ import annotations

from typing import Any

# JSON Schema (ECMA-262) and Python read the same: any text without U+0000.
NO_NUL = "^[^\\u0000]*$"
# Text that is not blank once stripped (str.strip() and str.isspace() agree on what is
# white space): some character neither white space nor NUL. Each character class is spelled
# out (`\\s` is not the same set in ECMA-262 and Python).
_SPACE = "".join(f"\\u{code:04x}" for code in range(0x10000) if chr(code).isspace())
NOT_BLANK = f"^[^\\u0000]*[^\\u0000{_SPACE}][^\\u0000]*$"
RULE = (
    "\n\nNo text sent to the Brain (a body's strings and keys at any depth, a parameter) may "
    "contain a NUL character (U+0000): it is a 400 naming the field."
)


def _is_string(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "string" or (isinstance(kind, list) and "string" in kind)


def _is_array(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "array" or (isinstance(kind, list) and "array" in kind)


def _is_object(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind)


# Any JSON value without a NUL in its strings or keys, at any depth: the values of free-form
# objects (a process's params, an inbox answer, a webhook's filter).
STORABLE_VALUE = "StorableValue"
STORABLE_REF = {"$ref": f"#/components/schemas/{STORABLE_VALUE}"}
STORABLE_SCHEMA = {
    "description": "any JSON value; no string or key in it contains NUL",
    "anyOf": [
        {"type": "string", "pattern": NO_NUL},
        {"type": ["number", "boolean", "null"]},
        {"type": "array", "items": STORABLE_REF},
        {
            "type": "object",
            "propertyNames": {"pattern": NO_NUL},
            "additionalProperties": STORABLE_REF,
        },
    ],
}


def _is_any(schema: Any) -> bool:
    """A schema that allows any value (`{}`, `true`, or only a description)."""
    return schema is True or (
        isinstance(schema, dict) and not set(schema) - {"description", "title", "default"}
    )


def state_storable_text(node: Any) -> None:
    """Add the NUL rule to every string and free-form object schema below `node`: free-form
    values are StorableValue."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            continue
        if not isinstance(item, dict):
            continue
        if _is_string(item) and not {"pattern", "enum", "const"} & item.keys():
            item["pattern"] = NO_NUL
        if _is_object(item) and item.get("additionalProperties", True) is not False:
            item.setdefault("propertyNames", {"pattern": NO_NUL})
            if _is_any(item.get("additionalProperties", True)):
                item["additionalProperties"] = dict(STORABLE_REF)
        if _is_array(item) and _is_any(item.get("items", True)):
            item["items"] = dict(STORABLE_REF)
        for key, value in item.items():
            if key == "properties" and isinstance(value, dict):
                for name, field in value.items():
                    if _is_any(field):
                        value[name] = {**field, **STORABLE_REF}
        stack.extend(item.values())


def referenced(node: Any, components: dict[str, Any]) -> set[str]:
    """The names of the component schemas `node` refers to, and those they refer to."""
    names: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and ref.startswith(COMPONENTS):
                name = ref.removeprefix(COMPONENTS)
                if name not in names and name in components:
                    names.add(name)
                    stack.append(components[name])
            stack.extend(item.values())
    return names


COMPONENTS = "#/components/schemas/"


def close_input_bodies(components: dict[str, Any]) -> None:
    """The bodies of InputSerializers (vancetope/api.py) refuse undeclared keys: their
    components (and a PATCH's `Patched…` one) say `additionalProperties: false`."""
    from vancetope.api import InputSerializer

    for name in InputSerializer.closed_components:
        for component in (name, f"Patched{name}"):
            if component in components:
                components[component]["additionalProperties"] = False


def require_patch_bodies(result: dict[str, Any]) -> None:
    """A PATCH without a body is a 400 (vancetope/api.py change_body): its body is required."""
    for operations in result.get("paths", {}).values():
        patch = operations.get("patch")
        if isinstance(patch, dict) and "requestBody" in patch:
            patch["requestBody"]["required"] = True


def require_bodies_with_required_fields(result: dict[str, Any]) -> None:
    """A JSON body whose schema requires fields (every member of a oneOf, for a body of several
    kinds) cannot be left out: a request without one is a 400 naming them, so the document
    says the body is required (schemathesis sent POST /api/memory without one as valid)."""
    components = result.get("components", {}).get("schemas", {})

    def resolved(schema: Any) -> Any:
        ref = schema.get("$ref", "") if isinstance(schema, dict) else ""
        return components.get(ref.rsplit("/", 1)[-1], {}) if ref else schema

    def requires_fields(schema: Any) -> bool:
        schema = resolved(schema)
        if not isinstance(schema, dict):
            return False
        members = schema.get("oneOf") or schema.get("anyOf")
        if members:
            return all(requires_fields(member) for member in members)
        return bool(schema.get("required"))

    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            body = operation.get("requestBody") if isinstance(operation, dict) else None
            media = (body or {}).get("content", {}).get("application/json", {})
            if body is not None and requires_fields(media.get("schema")):
                body["required"] = True


def postprocess_storable_text(result: dict[str, Any], generator: Any, **kwargs: Any) -> Any:
    """drf-spectacular postprocessing hook (SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"]):
    the rule on what requests carry (parameters, bodies and the schemas they refer to), not on
    answers (an error message may quote what it refused)."""
    components = result.get("components", {}).get("schemas", {})
    close_input_bodies(components)
    inputs: list[Any] = []
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            inputs += [parameter.get("schema") for parameter in operation.get("parameters", [])]
            body = operation.get("requestBody", {}).get("content", {})
            inputs += [media.get("schema") for media in body.values()]
    state_storable_text(inputs)
    state_storable_text([components[name] for name in sorted(referenced(inputs, components))])
    components[STORABLE_VALUE] = STORABLE_SCHEMA
    require_patch_bodies(result)
    require_bodies_with_required_fields(result)
    info = result.setdefault("info", {})
    info["description"] = info.get("description", "") + RULE
    return result


# drf-spectacular's settings (vancetope/settings.py names them).
SPECTACULAR_SETTINGS = {
    "TITLE": "Vancetope Brain API",
    "DESCRIPTION": "Sessions, think processes, engines and recipes of a Vancetope Brain.",
    "VERSION": "0.1.0",
    # 3.1: its schemas are JSON Schema, as pydantic writes the bodies' (nullable is `null`).
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # A serializer's text field that may not be blank says so (minLength 1), as DRF refuses "".
    "ENFORCE_NON_BLANK_FIELDS": True,
    # Rules every input keeps, stated on every field (vancetope/openapi.py).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "vancetope.openapi.postprocess_storable_text",
    ],
    # Two bodies have a field `kind`: an inbox item's and a workflow task's.
    "ENUM_NAME_OVERRIDES": {
        "InboxKindEnum": ["OUTPUT_TEXT", "APPROVAL", "QUESTION"],
        "WorkflowTaskKindEnum": ["WORKER", "USER_INPUT", "AGGREGATE"],
        # Memory items and settings live at the same four scopes.
        "ScopeEnum": ["session", "project", "group", "tenant"],
        # The knowledge graph (vancetope/memory/presenters.py): a node's kind, an edge's author.
        "KnowledgeNodeKindEnum": ["item", "chunk"],
        "EdgeAuthorKindEnum": ["linker", "process", "user"],
        "KnowledgeEdgeTypeEnum": ["supports", "contradicts", "derived_from", "mentions"],
    },
}
