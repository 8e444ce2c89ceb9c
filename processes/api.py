"""REST: /api/processes — list, detail and lifecycle commands (409 when the status forbids)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from engines.api import EngineNameField
from processes import queries
from processes.actions import create, lifecycle
from processes.actions.steer import steer_as
from processes.actions.task_tree import cancel_task_node
from processes.actions.uncompact import uncompact
from processes.actions.undo import undo_turn
from processes.actions.unsend import unsend_message
from processes.last_task import with_last_turn
from processes.presenters import process_data, process_detail, process_row
from processes.states import Status
from protocol.outbound import (
    PendingData,
    ProcessDetail,
    ProcessObject,
    ProcessRow,
    ProcessUncompactedData,
    ProcessUndoneData,
    ProcessUnsentData,
)
from vancetope.api import (
    PAGE_PARAMETERS,
    Body,
    InputSerializer,
    Page,
    PublicIdField,
    errors,
    paginated,
)
from vancetope.errors import BadRequest, NotFound
from vancetope.ids import MAX_PK, parse_public_id, parse_whole_number, public_id_pattern


class SteerInput(InputSerializer):
    message = serializers.CharField(allow_blank=False)


class CreateInput(InputSerializer):
    session = PublicIdField("sess", help_text="the session (sess_N) the process runs in")
    goal = serializers.CharField(required=False, allow_blank=True, default="")
    thinkEngine = EngineNameField(required=False, allow_null=True, default=None)
    recipe = serializers.CharField(required=False, allow_null=True, default=None)
    params = serializers.DictField(required=False, default=dict)
    start = serializers.BooleanField(required=False, default=True)


class NodeCancelled(Body):
    """The order to cancel a task-tree node was queued for the process (its `seq`); the
    process carries it out in its lane and sends the changed tree as a `task-tree` event."""

    processId: str
    nodeId: str
    seq: int


class ProcessPage(Page[ProcessRow]):
    """A page of processes, newest first, each with its last task."""


LIFECYCLE_SCHEMA = extend_schema(
    request=None, responses={200: ProcessObject, **errors(401, 404, 409)}
)


class ProcessViewSet(viewsets.ViewSet):
    lookup_field = "process_id"
    lookup_value_regex = r"[^/]+"

    @extend_schema(
        operation_id="processes_list",
        parameters=[
            OpenApiParameter(
                "session", str, description="sess_… id", pattern=public_id_pattern("sess")
            ),
            OpenApiParameter("status", str, enum=Status.values),
            OpenApiParameter("engine", str, description="think engine name"),
            OpenApiParameter(
                "category",
                str,
                enum=list(queries.CATEGORIES),
                description="user (the default: processes of service recipes left out) or "
                "service (only those)",
            ),
            *PAGE_PARAMETERS,
        ],
        responses={200: ProcessPage, **errors(400, 401)},
    )
    def list(self, request: Request) -> Response:
        rows = queries.readable_processes(request.user)
        params = request.query_params
        if "session" in params:
            try:
                session_pk = parse_public_id("sess", params["session"], "session")
            except NotFound as exc:
                raise BadRequest(
                    f"session must be a session id like sess_12, not {params['session']!r}"
                ) from exc
            rows = rows.filter(session_id=session_pk)
        if "status" in params:
            if params["status"] not in Status.values:
                raise BadRequest(f"status must be one of {', '.join(Status.values)}")
            rows = rows.filter(status=params["status"])
        if "engine" in params:
            rows = rows.filter(think_engine=params["engine"])
        rows = queries.in_category(rows, params.get("category"))
        return paginated(request, self, with_last_turn(rows).order_by("-pk"), process_row)

    @extend_schema(
        operation_id="processes_create",
        request=CreateInput,
        responses={201: ProcessObject, **errors(400, 401, 404, 409)},
    )
    def create(self, request: Request) -> Response:
        """Create a process in one of the caller's sessions (started unless `start` is false);
        neither engine nor recipe: the default process recipe (marvin)."""
        body = CreateInput(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        process = create.create_for_user(
            request.user,
            data["session"],
            goal=data["goal"],
            engine=data["thinkEngine"],
            recipe=data["recipe"],
            params=data["params"],
            start=data["start"],
        )
        return Response(process_data(process), status=201)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "messages",
                {"type": "integer", "minimum": 0, "maximum": MAX_PK},
                description="only the last N messages",
            )
        ],
        responses={200: ProcessDetail, **errors(400, 401, 404)},
    )
    def retrieve(self, request: Request, process_id: str) -> Response:
        pk = parse_public_id("tp", process_id, "process")
        process = queries.get_readable_process(request.user, pk)
        text = request.query_params.get("messages")
        limit = None if text is None else parse_whole_number(text)
        if text is not None and limit is None:
            raise BadRequest(f"messages must be a whole number from 0 to {2**63 - 1}, not {text!r}")
        return Response(process_detail(process, messages_limit=limit))

    def _process(self, request: Request, process_id: str):  # type: ignore[no-untyped-def]
        pk = parse_public_id("tp", process_id, "process")
        return queries.get_visible_process(request.user, pk)

    def _lifecycle(self, request: Request, process_id: str, call) -> Response:  # type: ignore[no-untyped-def]
        process = self._process(request, process_id)
        return Response(process_data(call(process.pk)))

    @LIFECYCLE_SCHEMA
    @action(detail=True, methods=["post"])
    def start(self, request: Request, process_id: str) -> Response:
        return self._lifecycle(request, process_id, lifecycle.start_process)

    @LIFECYCLE_SCHEMA
    @action(detail=True, methods=["post"])
    def pause(self, request: Request, process_id: str) -> Response:
        return self._lifecycle(request, process_id, lifecycle.pause_process)

    @LIFECYCLE_SCHEMA
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, process_id: str) -> Response:
        return self._lifecycle(request, process_id, lifecycle.resume_process)

    @LIFECYCLE_SCHEMA
    @action(detail=True, methods=["post"])
    def stop(self, request: Request, process_id: str) -> Response:
        return self._lifecycle(request, process_id, lifecycle.stop_process)

    @LIFECYCLE_SCHEMA
    @action(detail=True, methods=["post"])
    def reset(self, request: Request, process_id: str) -> Response:
        return self._lifecycle(request, process_id, lifecycle.reset_process)

    @extend_schema(
        request=SteerInput, responses={200: PendingData, **errors(400, 401, 404, 409, 429)}
    )
    @action(detail=True, methods=["post"])
    def steer(self, request: Request, process_id: str) -> Response:
        process = self._process(request, process_id)
        body = SteerInput(data=request.data)
        body.is_valid(raise_exception=True)
        steered, refused = steer_as(request.user, process.pk, [body.validated_data["message"]])
        if refused is not None:
            raise refused
        return Response(
            PendingData(
                processId=process.public_id,
                pending=steered[0].pending,
                seq=steered[0].message.seq,
            ).model_dump()
        )

    @extend_schema(request=None, responses={200: ProcessUndoneData, **errors(401, 404, 409)})
    @action(detail=True, methods=["post"])
    def undo(self, request: Request, process_id: str) -> Response:
        """Take back the process's last turn on a person's message (as `process-undo`)."""
        pk = parse_public_id("tp", process_id, "process")
        undone = undo_turn(pk, user=request.user)
        body = {"process": process_data(undone.process), "undone": undone.data()}
        return Response(ProcessUndoneData.model_validate(body).model_dump())

    @extend_schema(request=None, responses={200: ProcessUncompactedData, **errors(401, 404, 409)})
    @action(detail=True, methods=["post"])
    def uncompact(self, request: Request, process_id: str) -> Response:
        """Undo the compaction the process's calls use (as `process-uncompact`)."""
        pk = parse_public_id("tp", process_id, "process")
        undone = uncompact(pk, user=request.user)
        return Response(ProcessUncompactedData.model_validate(undone.data()).model_dump())

    @extend_schema(
        operation_id="processes_message_unsend",
        parameters=[
            OpenApiParameter(
                "seq",
                {"type": "integer", "minimum": 1, "maximum": MAX_PK},
                OpenApiParameter.PATH,
                description="the message's number in the process",
            )
        ],
        request=None,
        responses={200: ProcessUnsentData, **errors(400, 401, 404, 409)},
    )
    @action(
        detail=True,
        methods=["post"],
        url_path=r"messages/(?P<seq>[^/]+)/unsend",
        url_name="message-unsend",
    )
    def unsend(self, request: Request, process_id: str, seq: str) -> Response:
        """Withdraw a pending message no turn has read yet (as `process-unsend`)."""
        pk = parse_public_id("tp", process_id, "process")
        number = parse_whole_number(seq)
        if not number:
            raise BadRequest(f"seq must be a message number from 1, not {seq!r}")
        message = unsend_message(pk, number, user=request.user)
        body = ProcessUnsentData(processId=f"tp_{message.process_id}", seq=message.seq)
        return Response(body.model_dump())

    @extend_schema(
        operation_id="processes_task_tree_node_cancel",
        request=None,
        responses={202: NodeCancelled, **errors(401, 404, 409)},
    )
    @action(
        detail=True,
        methods=["post"],
        url_path=r"task-tree/(?P<node_id>[^/]+)/cancel",
        url_name="task-node-cancel",
    )
    def cancel_node(self, request: Request, process_id: str, node_id: str) -> Response:
        process = self._process(request, process_id)
        seq = cancel_task_node(process, node_id)
        body = NodeCancelled(processId=process.public_id, nodeId=node_id, seq=seq)
        return Response(body.model_dump(), status=202)
