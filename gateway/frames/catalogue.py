"""What a client may start (docs/protocol.md): `thinkengines-list`, `recipes-list`."""

from __future__ import annotations

from engines.registry import all_engines
from gateway.frames.socket import FrameHandler, Socket
from protocol import inbound as p
from protocol import outbound as out
from recipes_app.api import recipe_data
from recipes_app.services import effective_recipes
from sessions_app import services
from vancetope.errors import BadRequest
from vancetope.service_calls import call_service
from vancetope.tenancy.services import get_visible_project


async def thinkengines_list(socket: Socket, frame: p.ThinkEnginesList) -> None:
    data = out.ThinkEnginesData(engines=[engine.describe() for engine in all_engines()])
    await socket.send_model(out.ThinkEngines(replyTo=frame.id, data=data))


async def recipes_list(socket: Socket, frame: p.RecipesList) -> None:
    if socket.session_id is not None:
        session_id = socket.session_id
        project = await call_service(lambda: services.load_session(session_id).project)
    elif frame.data.projectId:
        project = await call_service(get_visible_project, socket.user, frame.data.projectId)
    else:
        raise BadRequest("name data.projectId or open a session first")
    # recipe_data reads each recipe's tenant and project: in the worker thread, not here.
    listed = await call_service(lambda: [recipe_data(r) for r in effective_recipes(project)])
    data = out.RecipesData(recipes=listed)
    await socket.send_model(out.Recipes(replyTo=frame.id, data=data))


HANDLERS: dict[str, FrameHandler] = {
    "thinkengines-list": thinkengines_list,
    "recipes-list": recipes_list,
}
