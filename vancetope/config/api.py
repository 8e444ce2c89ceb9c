"""REST: /api/settings — every key's effective value at a scope, with the scope it comes from;
PUT and DELETE /api/settings/{key} set and unset a value at a scope (PROTOCOL, second stage).
Secrets are write-only: their value reads as "***" (or "" when none is set)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from vancetope.api import PAGE_PARAMETERS, Body, InputSerializer, Page, errors, paginated
from vancetope.config import services
from vancetope.config.cascade import DEFAULT, Effective, Resolved
from vancetope.config.registry import SettingType, all_keys
from vancetope.config.services import SCOPES, Target
from vancetope.jsonbody import BodyParser
from vancetope.redact import redacted

MASK = "***"
SCOPE_ID_HELP = (
    "tenant: its slug (omitted: the caller's tenant); group: tenant-slug/group-slug; "
    "project: proj_…; session: sess_…"
)


class SettingObject(Body):
    """A key and its effective value at the scope asked about."""

    key: str
    type: SettingType
    description: str
    # The engine's name for an engine's key (`arthur`), else the Brain's namespace (`llm`).
    namespace: str
    secret: bool
    # The allowed values, when only some are.
    choices: list[Any]
    # The effective value; a secret's is "***" when set (never its clear value).
    value: Any
    # Where the value comes from: default, or the scope that sets it and its id.
    scope: str
    scopeId: str | None


class SettingPage(Page[SettingObject]):
    """Every registered key at one scope, by key."""


@extend_schema_field({"type": ["string", "number", "boolean", "object", "array"]})
class AnyValue(serializers.JSONField):
    pass


class SettingInput(InputSerializer):
    scope = serializers.ChoiceField(choices=SCOPES)
    scopeId = serializers.CharField(required=False, allow_blank=True, help_text=SCOPE_ID_HELP)
    value = AnyValue(help_text="a value of the key's type (never null)")


def setting_data(resolved: Resolved, target: Target) -> dict[str, Any]:
    key = resolved.key
    value = resolved.value
    if key.secret:
        value = MASK if value else ""
    else:
        value = redacted(value)  # a URL's credentials (llm.baseUrl's user:pass@)
    source = resolved.scope
    return {
        "key": key.name,
        "type": key.type,
        "description": key.description,
        "namespace": key.namespace,
        "secret": key.secret,
        "choices": list(key.choices),
        "value": value,
        "scope": source,
        "scopeId": None if source == DEFAULT else target.name_of(source, resolved.scope_id),
    }


def _rows(target: Target, found: Effective) -> list[dict[str, Any]]:
    return [setting_data(found[name], target) for name in sorted(found)]


SCOPE_PARAMETERS = [
    OpenApiParameter("scope", str, enum=SCOPES, required=True),
    OpenApiParameter("scopeId", str, description=SCOPE_ID_HELP),
]
# The registered keys (the Brain's and every engine's: registered before the URLs, which
# import this module, are loaded); any other key is a 400.
KEY_PARAMETER = OpenApiParameter(
    "key", str, OpenApiParameter.PATH, enum=sorted(key.name for key in all_keys())
)


class SettingViewSet(viewsets.ViewSet):
    lookup_field = "key"
    lookup_value_regex = r"[^/]+"
    parser_classes = [BodyParser]

    @extend_schema(
        operation_id="settings_list",
        parameters=[*SCOPE_PARAMETERS, *PAGE_PARAMETERS],
        responses={200: SettingPage, **errors(400, 401, 404)},
    )
    def list(self, request: Request) -> Response:
        params = request.query_params
        target, found = services.settings_at(
            request.user, params.get("scope"), params.get("scopeId")
        )
        return paginated(request, self, _rows(target, found), lambda row: row)

    @extend_schema(
        operation_id="settings_set",
        parameters=[KEY_PARAMETER],
        request=SettingInput,
        responses={200: SettingObject, **errors(400, 401, 403, 404)},
    )
    def update(self, request: Request, key: str) -> Response:
        given = SettingInput(data=request.data)
        given.is_valid(raise_exception=True)
        data = given.validated_data
        target, found = services.set_setting(
            request.user, key, data["scope"], data.get("scopeId"), data["value"]
        )
        return Response(setting_data(found[key], target))

    @extend_schema(
        operation_id="settings_unset",
        parameters=[KEY_PARAMETER, *SCOPE_PARAMETERS],
        responses={200: SettingObject, **errors(400, 401, 403, 404)},
    )
    def destroy(self, request: Request, key: str) -> Response:
        params = request.query_params
        target, found = services.unset_setting(
            request.user, key, params.get("scope"), params.get("scopeId")
        )
        return Response(setting_data(found[key], target))
