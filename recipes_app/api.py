"""REST: /api/recipes — recipes visible in the caller's scope."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from engines.api import EngineNameField
from engines.registry import get_engine
from protocol.outbound import RecipeObject, RecipesData
from recipes_app.models import Recipe, RecipeCategory, RecipeScope
from recipes_app.writes import API_FIELDS, delete_recipe, shadowed_scopes, write_recipe
from vancetope.api import PAGE_PARAMETERS, InputSerializer, Page, errors, paginated
from vancetope.errors import BadRequest, NotFound
from vancetope.tenancy.services import visible_projects, visible_tenants

MODEL_FIELDS = {api: model for model, api in API_FIELDS.items()}


def recipe_data(recipe: Recipe) -> dict[str, Any]:
    return {
        "id": recipe.public_id,
        "name": recipe.name,
        "engine": recipe.engine,
        "title": recipe.title,
        "description": recipe.description,
        "params": recipe.params,
        "promptPrefix": recipe.prompt_prefix,
        "allowedToolsAdd": recipe.allowed_tools_add,
        "allowedToolsRemove": recipe.allowed_tools_remove,
        "category": recipe.category,
        "roles": recipe.roles,
        "a2a": recipe.a2a,
        "scope": recipe.scope,
        "tenant": recipe.tenant.slug if recipe.tenant else None,
        "projectId": recipe.project.public_id if recipe.project else None,
        "shadows": shadowed_scopes(recipe),
    }


class RecipePage(Page[RecipeObject]):
    """A page of recipes, by name (a name may be in several scopes)."""


class RecipeInput(InputSerializer):
    name = serializers.RegexField(r"^[a-z0-9]+(-[a-z0-9]+)*$", max_length=100)
    engine = EngineNameField(max_length=50)
    title = serializers.CharField(max_length=200, required=False, allow_blank=True)
    description = serializers.CharField(required=False, allow_blank=True)
    params = serializers.DictField(required=False)
    promptPrefix = serializers.CharField(required=False, allow_blank=True)
    allowedToolsAdd = serializers.ListField(child=serializers.CharField(), required=False)
    allowedToolsRemove = serializers.ListField(child=serializers.CharField(), required=False)
    category = serializers.ChoiceField(RecipeCategory.choices, required=False)
    roles = serializers.ListField(child=serializers.CharField(), required=False)
    a2a = serializers.BooleanField(required=False)
    scope = serializers.ChoiceField([RecipeScope.TENANT, RecipeScope.PROJECT])
    projectId = serializers.CharField(
        help_text="proj_…: the project (a tenant recipe: a project of the tenant)"
    )

    def validate_engine(self, value: str) -> str:
        if get_engine(value) is None:
            raise serializers.ValidationError(f"think engine {value!r} is not registered")
        return value


def visible_recipes(user: Any) -> QuerySet[Recipe]:
    return Recipe.objects.filter(
        Q(scope=RecipeScope.BUNDLED)
        | Q(scope=RecipeScope.TENANT, tenant__in=visible_tenants(user))
        | Q(scope=RecipeScope.PROJECT, project__in=visible_projects(user))
    ).select_related("tenant", "project")


RECIPE_FILTERS = [
    OpenApiParameter("scope", str, enum=RecipeScope.values),
    OpenApiParameter("engine", str, description="think engine name"),
]


class RecipeViewSet(viewsets.ViewSet):
    lookup_field = "name"
    # Any name reaches the view, so one that cannot exist is a JSON 404 like any other.
    lookup_value_regex = r"[^/]+"

    def _rows(self, request: Request) -> QuerySet[Recipe]:
        rows = visible_recipes(request.user)
        if "scope" in request.query_params:
            scope = request.query_params["scope"]
            if scope not in RecipeScope.values:
                raise BadRequest(f"scope must be one of {', '.join(RecipeScope.values)}")
            rows = rows.filter(scope=scope)
        if "engine" in request.query_params:
            rows = rows.filter(engine=request.query_params["engine"])
        return rows.order_by("name", "scope", "pk")

    @extend_schema(
        operation_id="recipes_list",
        parameters=[*RECIPE_FILTERS, *PAGE_PARAMETERS],
        responses={200: RecipePage, **errors(400, 401)},
    )
    def list(self, request: Request) -> Response:
        return paginated(request, self, self._rows(request), recipe_data)

    @extend_schema(
        parameters=RECIPE_FILTERS,
        responses={200: RecipesData, **errors(400, 401, 404)},
    )
    def retrieve(self, request: Request, name: str) -> Response:
        rows = list(self._rows(request).filter(name=name))
        if not rows:
            raise NotFound(f"recipe {name!r} not found")
        return Response({"recipes": [recipe_data(row) for row in rows]})

    @extend_schema(
        request=RecipeInput, responses={201: RecipeObject, **errors(400, 401, 403, 404, 409)}
    )
    def create(self, request: Request) -> Response:
        recipe = write_recipe(request.user, self._validated(request), create=True)
        return Response(recipe_data(recipe), status=status.HTTP_201_CREATED)

    @extend_schema(request=RecipeInput, responses={200: RecipeObject, **errors(400, 401, 403, 404)})
    def update(self, request: Request, name: str) -> Response:
        fields = self._validated(request)
        if fields["name"] != name:
            raise BadRequest("the name in the body must match the URL")
        return Response(recipe_data(write_recipe(request.user, fields, create=False)))

    @extend_schema(
        parameters=[
            OpenApiParameter("scope", str, enum=[RecipeScope.TENANT, RecipeScope.PROJECT]),
            OpenApiParameter(
                "projectId",
                {"type": "string", "minLength": 1},
                required=True,
                description="proj_… id",
            ),
        ],
        responses={204: None, **errors(400, 401, 403, 404)},
    )
    def destroy(self, request: Request, name: str) -> Response:
        params = request.query_params
        scope = params.get("scope", RecipeScope.PROJECT)
        delete_recipe(request.user, name, scope, params.get("projectId"))
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _validated(self, request: Request) -> dict[str, Any]:
        """The body as the model's fields (plus scope and projectId)."""
        serializer = RecipeInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        return {MODEL_FIELDS.get(str(key), str(key)): value for key, value in data.items()}
