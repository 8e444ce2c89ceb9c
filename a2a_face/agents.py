"""Which agents a person may talk to, and their cards.

An agent is a recipe marked `a2a` as a project sees it: the narrowest scope of the name wins
(a project recipe of the same name that is not marked hides a bundled one that is). A project
the person cannot see, a recipe it has not, one not marked, or a service recipe: none is
an agent, all alike a 404.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0

from recipes_app.models import RecipeCategory
from recipes_app.services import resolve_recipe
from vancetope.errors import NotFound
from vancetope.tenancy.services import get_visible_project

# The JSON-RPC binding's name on a card (a2a.utils.constants.TransportProtocol.JSONRPC).
JSONRPC = "JSONRPC"
BEARER = "bearer"


@dataclass(frozen=True)
class Agent:
    """A public recipe of a project, as the A2A face serves it."""

    project_id: str  # proj_<slug>
    recipe: str
    engine: str
    title: str
    description: str

    @property
    def path(self) -> str:
        return f"/a2a/{self.project_id}/{self.recipe}"


def public_agent(user: Any, project_id: str, recipe: str) -> Agent:
    """The agent `recipe` of the project, for a person who sees the project; else a 404."""
    project = get_visible_project(user, project_id)
    try:
        found = resolve_recipe(project, recipe=recipe, engine=None)
    except NotFound:
        found = None
    if found is None or not found.a2a or found.category != RecipeCategory.USER:
        raise NotFound(f"no A2A agent {recipe!r} in project {project_id}")
    return Agent(
        project_id=project.public_id,
        recipe=found.name,
        engine=found.engine,
        title=found.title or found.name,
        description=found.description or found.title or found.name,
    )


def agent_card(agent: Agent, base_url: str) -> AgentCard:
    """The card: one JSON-RPC endpoint for both protocol versions the SDK serves (1.0 and
    0.3), streaming, no push notifications, the API token as an HTTP bearer."""
    url = f"{base_url}{agent.path}"
    return AgentCard(
        name=agent.title,
        description=agent.description,
        version="0.1.0",
        provider=AgentProvider(organization="Vancetope", url=base_url),
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=JSONRPC, protocol_version=version)
            for version in (PROTOCOL_VERSION_1_0, PROTOCOL_VERSION_0_3)
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        security_schemes={
            BEARER: SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer",
                    bearer_format="Vancetope API token",
                    description="Authorization: Bearer <API token>, as the REST API",
                )
            )
        },
        security_requirements=[SecurityRequirement(schemes={BEARER: StringList(list=[])})],
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id=agent.recipe,
                name=agent.title,
                description=agent.description,
                tags=[agent.engine],
            )
        ],
    )
