"""A cron job's action (docs/protocol.md, "Cron job"): one pydantic model per type, strict
(a number is no flag, a flag no number) and closed (an unknown key is refused), so every
problem is a 400 naming its path (`action.constraints.maxTasks`). What the models cannot know
(the process or workflow exists and is visible, the workflow's input fits it) is checked by
`checked_action` after them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from processes.queries import get_visible_process
from triggers.models import CronAction
from triggers.workflows.services import get_visible_workflow, instantiate
from vancetope.errors import BadRequest
from vancetope.ids import parse_public_id
from vancetope.memory import linker
from vancetope.tenancy.models import Project

AtLeastOne = Annotated[int, Field(ge=1)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ContinueConstraints(_Strict):
    maxTasks: AtLeastOne = 1
    # None: no limit on the continuation's tokens.
    maxTokens: AtLeastOne | None = None
    stopOnApproval: bool = True
    # A task that needs a client tool no client offers stops the run (false: it is set aside).
    stopOnClientTool: bool = True


class ProcessContinue(_Strict):
    type: Literal["process_continue"]
    processId: str
    constraints: ContinueConstraints = ContinueConstraints()


class RunWorkflow(_Strict):
    type: Literal["run_workflow"]
    workflowId: str
    input: dict[str, Any] = {}


class LinkerConstraints(_Strict):
    maxLlmCalls: AtLeastOne | None = None


class BrainLinker(_Strict):
    type: Literal["brain_linker"]
    # None given: every strategy.
    strategies: list[Annotated[str, Field(min_length=1)]] = Field([], validate_default=True)
    constraints: LinkerConstraints = LinkerConstraints()

    @field_validator("strategies")
    @classmethod
    def known_strategies(cls, names: list[str]) -> list[str]:
        unknown = [name for name in names if name not in linker.STRATEGIES]
        if unknown:
            raise ValueError(f"unknown strategy {unknown[0]!r}; use {', '.join(linker.STRATEGIES)}")
        return list(dict.fromkeys(names)) or list(linker.STRATEGIES)


MODELS: dict[str, type[ProcessContinue | RunWorkflow | BrainLinker]] = {
    CronAction.PROCESS_CONTINUE: ProcessContinue,
    CronAction.RUN_WORKFLOW: RunWorkflow,
    CronAction.BRAIN_LINKER: BrainLinker,
}


def parsed_action(action: Any) -> ProcessContinue | RunWorkflow | BrainLinker:
    """The action as its model; a 400 naming the path of its first problem."""
    if not isinstance(action, dict):
        raise BadRequest.naming("action", "must be an object with a type")
    model = MODELS.get(str(action.get("type")))
    if model is None:
        raise BadRequest.naming("action.type", f"must be one of {', '.join(CronAction.values)}")
    try:
        return model.model_validate(action)
    except ValidationError as exc:
        raise BadRequest.from_validation(exc, under="action") from exc


def checked_action(owner: Any, action: Any) -> tuple[dict[str, Any], Project | None]:
    """The action normalized (every constraint spelled out), and the project it names (a
    process's or a workflow's; the brain linker's is the job's)."""
    parsed = parsed_action(action)
    if isinstance(parsed, ProcessContinue):
        process = get_visible_process(owner, parse_public_id("tp", parsed.processId, "process"))
        return {**parsed.model_dump(), "processId": process.public_id}, process.session.project
    if isinstance(parsed, RunWorkflow):
        workflow = get_visible_workflow(owner, parsed.workflowId)
        try:
            instantiate(workflow.body, parsed.input)
        except BadRequest as exc:
            where = f"action.{exc.field}" if exc.field else "action.input"
            raise BadRequest.naming(where, exc.message.split(": ", 1)[-1]) from exc
        return {**parsed.model_dump(), "workflowId": workflow.public_id}, workflow.project
    return parsed.model_dump(), None
