"""REST: /api/think-engines — the registry, paginated like every list."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from engines.registry import all_engines
from protocol.outbound import EngineDescriptor
from vancetope.api import PAGE_PARAMETERS, Page, errors, paginated


# A think engine's name in a body: the document lists the registered ones (an enum), as the
# view refuses any other with a 400 naming the field. (No docstring: the document would
# describe the field with it.)
class EngineNameField(serializers.CharField):
    pass


class EngineNameSchema(OpenApiSerializerFieldExtension):
    """The enum of EngineNameField, read from the registry when the document is built (the
    engines register in EnginesConfig.ready(), after this module is imported)."""

    target_class = EngineNameField

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        names = sorted(engine.name for engine in all_engines())
        # One component (ThinkEngineName) for every such field, so the enum has one name.
        component = ResolvedComponent(
            name="ThinkEngineName",
            type=ResolvedComponent.SCHEMA,
            object="ThinkEngineName",
            schema={"type": "string", "enum": names, "description": "a registered think engine"},
        )
        auto_schema.registry.register_on_missing(component)
        return dict(component.ref)


class EnginePage(Page[EngineDescriptor]):
    """A page of the registered think engines."""


class ThinkEngineList(APIView):
    @extend_schema(
        operation_id="think_engines_list",
        parameters=PAGE_PARAMETERS,
        responses={200: EnginePage, **errors(400, 401)},
    )
    def get(self, request: Request) -> Response:
        return paginated(request, self, all_engines(), lambda engine: engine.describe())
