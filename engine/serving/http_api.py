"""``flowdesk serve``: the HTTP API over the shared run service (the ``serve`` extra).

Routes (docs/serving.md; the OpenAPI page at ``/docs``, its document at ``/openapi.json``):
``GET /flows``, ``POST /flows/{id}/runs``, ``GET /runs``, ``GET /runs/{id}``, ``GET
/runs/{id}/events`` (Server-Sent Events), ``POST /runs/{id}/decision``, ``POST
/runs/{id}/cancel`` and ``POST /hooks/{flowId}`` (a webhook).

Who may call: with a token set, every route but the documentation needs ``Authorization:
Bearer TOKEN``; a webhook of a flow with a secret is signed instead (``X-Flowdesk-Signature:
sha256=<hex HMAC-SHA256 of the body>``; :mod:`engine.serving.auth`). Without a token (loopback
only) a request must name a loopback host (DNS rebinding). Request bodies are limited to
``max_body`` bytes (413 beyond). CORS is off unless origins are given.

SSE: each event is ``id: <seq>`` and ``data: <the event in the --jsonl wire form>``; a client
that reconnects with ``Last-Event-ID: <seq>`` gets what follows that event. The stream ends
after the run's terminal status and stays open (with ``: keep-alive`` comments) while it is
paused.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field

from engine.errors import FlowdeskError
from engine.resources import flowdesk_version
from engine.serving.auth import SIGNATURE_HEADER, is_loopback, signature_ok, token_ok, webhook_secret
from engine.serving.service import POLL_SECONDS, RunService, ServiceError

__all__ = ["create_app", "MAX_BODY", "KEEPALIVE_SECONDS"]

log = logging.getLogger(__name__)

MAX_BODY = 1024 * 1024  # bytes a request body may have (413 beyond)
KEEPALIVE_SECONDS = 15.0  # a comment line this often on a quiet event stream


def validation_message(errors: Any) -> str:
    """FastAPI's list of pydantic errors as the one sentence every other refusal gives
    (``{"detail": "..."}``), naming the field of the body that is wrong."""
    parts = []
    for error in errors or ():
        loc = [str(p) for p in error.get("loc", ()) if p != "body"]
        where = "the body" if not loc or error.get("type") == "json_invalid" else "'" + ".".join(loc) + "'"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "The request is not valid: " + ("; ".join(parts) or "unreadable body") + "."


PUBLIC_PATHS = frozenset({"/docs", "/docs/oauth2-redirect", "/openapi.json", "/redoc"})

Background = Callable[[RunService], Awaitable[None]]
_bearer = HTTPBearer(auto_error=False, description="the token given to flowdesk serve --token")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
# The paths' parameters are named as DESIGN.md and docs/serving.md name them ({id}, {flowId}).
FlowPathId = Annotated[str, Path(alias="id", description="a library flow's id (GET /flows)")]
RunPathId = Annotated[str, Path(alias="id", description="a run's id (runId)")]
HookPathId = Annotated[str, Path(alias="flowId", description="the id of the library flow the webhook starts")]


# ---------------------------------------------------------------------- models
class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FlowParameterOut(BaseModel):
    name: str
    type: str = "string"
    description: str = ""
    required: bool = False
    value: Any = None


class FlowOut(BaseModel):
    id: str
    name: str
    description: str = ""
    parameters: list[FlowParameterOut] = Field(default_factory=list)
    triggers: list[str] = Field(default_factory=list)
    canPause: bool = False
    signedWebhook: bool = Field(False, description="whether POST /hooks/{id} must be signed")


class StartRun(_In):
    input: str | None = Field(None, description="the run's initial input (the Start node's output)")
    vars: dict[str, Any] | None = Field(None, description="run variables, checked against the Start variables")


class RunStarted(BaseModel):
    runId: str


class RunOut(BaseModel):
    runId: str
    status: str = Field(description="pending, running, paused, completed, failed, cancelled or interrupted")
    output: Any = None
    vars: dict[str, Any] = Field(default_factory=dict)
    waitingForInput: bool = False
    currentNodeId: str | None = None
    flow: str = ""
    error: str | None = None
    prompt: str | None = Field(None, description="the approval's prompt while the run waits")
    options: list[str] = Field(default_factory=list, description="decisions it takes besides approve and reject")


class RunSummary(BaseModel):
    """A recorded run, as ``flowdesk runs --json`` lists it, with ``runId`` (the same as ``id``)
    as every other endpoint names a run."""

    model_config = ConfigDict(extra="allow")
    runId: str
    id: str
    workflowName: str
    workflowPath: str | None = None
    initialInput: str | None = None
    status: str
    startedAt: str
    endedAt: str | None = None
    durationSeconds: float | None = None
    currentNodeId: str | None = None
    waitingForInput: bool = False
    error: str | None = None
    arguments: dict[str, Any] | None = None


class Decision(_In):
    decision: str = Field(description="approve, reject, or one of the approval's options")
    note: str | None = Field(None, description="what the next steps see as {{APPROVAL_NOTE}}")
    output: Any = Field(None, description="the reviewed output, edited: what flows on from the approval")


class Problem(BaseModel):
    detail: str


_ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": Problem} for code in (401, 404, 409, 413, 422, 503)}


# ---------------------------------------------------------------------- ASGI guards
class _BodyLimit:
    """Refuse (413) a request whose body is larger than ``limit`` bytes, declared or streamed."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for k, v in scope.get("headers", ()):
            if k == b"content-length" and v.isdigit() and int(v) > self.limit:
                await _send_json(send, 413, {"detail": f"The request body is larger than {self.limit} bytes."})
                return
        seen = 0
        started = False

        async def limited_receive() -> Any:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge
            return message

        async def tracking_send(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await _send_json(send, 413, {"detail": f"The request body is larger than {self.limit} bytes."})


class _LocalHostsOnly:
    """Without a token, answer only requests addressed to a loopback name (``Host: 127.0.0.1``,
    ``localhost``, ``[::1]``): a web page cannot reach the open loopback API through a DNS name
    rebound to 127.0.0.1 (421 otherwise)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            host = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"host"), "")
            name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
            if not is_loopback(name):
                await _send_json(send, 421, {"detail": f"This server answers only local names, not '{host}'."})
                return
        await self.app(scope, receive, send)


class _TooLarge(FlowdeskError):  # noqa: N818 - an internal signal, answered 413 by _BodyLimit
    pass


async def _send_json(send: Any, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": data})


# ---------------------------------------------------------------------- the app
def create_app(
    service: RunService,
    *,
    token: str | None = None,
    max_body: int = MAX_BODY,
    cors_origins: list[str] | None = None,
    background: list[Background] | None = None,
) -> Any:
    """The API as an ASGI app. ``background``: coroutine functions started with the app and
    cancelled when it stops (``flowdesk serve`` passes its schedule runner there)."""

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        tasks = [asyncio.ensure_future(job(service)) for job in background or ()]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            await service.close()

    app = FastAPI(
        title="Flowdesk",
        version=flowdesk_version(),
        description=(
            "Run Flowdesk library flows over HTTP: start runs, follow their events (Server-Sent Events), answer "
            "their approvals, cancel them, and start flows from webhooks. Runs are recorded in the same run "
            "history as the desktop's and `flowdesk run`'s."
        ),
        lifespan=lifespan,
    )

    def authorised(credentials: Credentials) -> None:
        if token is None:
            return
        given = f"Bearer {credentials.credentials}" if credentials is not None else None
        if not token_ok(given, token):
            raise ServiceError(401, "A valid bearer token is required (Authorization: Bearer TOKEN).")

    guarded = [Depends(authorised)]

    @app.exception_handler(ServiceError)
    async def _refused(_request: Request, err: ServiceError) -> JSONResponse:
        headers = {"WWW-Authenticate": 'Bearer realm="flowdesk"'} if err.status == 401 else None
        return JSONResponse({"detail": str(err)}, status_code=err.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, err: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": validation_message(err.errors())}, status_code=422)

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, err: Exception) -> JSONResponse:
        log.exception("request failed")
        return JSONResponse({"detail": f"The server failed on this request ({type(err).__name__}); see its log."}, 500)

    @app.get("/flows", response_model=list[FlowOut], dependencies=guarded, tags=["flows"])
    async def list_flows() -> list[FlowOut]:
        """The enabled flows of the library, with their parameters (Start variables)."""
        flows = await asyncio.to_thread(service.flows)
        out = []
        for f in flows:
            signed = False
            try:
                signed = webhook_secret(service.library.load_path(f.path))[0] is not None
            except Exception:  # an unreadable file was listed with an error and skipped already
                pass
            out.append(
                FlowOut(
                    id=f.id,
                    name=f.name,
                    description=f.description,
                    parameters=[FlowParameterOut(**p.to_json()) for p in f.parameters],
                    triggers=list(f.triggers),
                    canPause=f.can_pause,
                    signedWebhook=signed,
                )
            )
        return out

    @app.post(
        "/flows/{id}/runs",
        response_model=RunStarted,
        dependencies=guarded,
        responses=_ERRORS,
        tags=["runs"],
    )
    async def start_run(flow_id: FlowPathId, body: StartRun | None = None) -> RunStarted:
        """Start a run of a library flow; it goes on in the background (follow it with GET /runs/{id}
        or its events)."""
        body = body or StartRun()
        run_id = await service.start(flow_id, input=body.input, variables=body.vars, given_as="a key of 'vars'")
        return RunStarted(runId=run_id)

    @app.get("/runs", response_model=list[RunSummary], dependencies=guarded, tags=["runs"])
    async def list_runs(
        flow: str | None = Query(None, description="only runs of the flow with this name"),
        status: str | None = Query(None, description="only runs with this status"),
        limit: int = Query(50, ge=1, le=1000),
    ) -> list[RunSummary]:
        """Recorded runs, newest first (every run of the history, whoever started it)."""
        rows = await asyncio.to_thread(service.list_runs, flow=flow, status=status, limit=limit)
        return [RunSummary(runId=row["id"], **row) for row in rows]

    @app.get("/runs/{id}", response_model=RunOut, dependencies=guarded, responses=_ERRORS, tags=["runs"])
    async def get_run(run_id: RunPathId) -> RunOut:
        """A run's status, output, variables and the approval it waits at."""
        return RunOut(**(await service.get(run_id)).to_json())

    @app.get(
        "/runs/{id}/events",
        dependencies=guarded,
        responses={200: {"content": {"text/event-stream": {}}}, **_ERRORS},
        response_class=StreamingResponse,
        tags=["runs"],
    )
    async def run_events(
        run_id: RunPathId,
        last_event_id: str | None = Header(None, alias="Last-Event-ID"),
        after: int | None = Query(None, description="start after this event number (as Last-Event-ID)"),
    ) -> StreamingResponse:
        """The run's log as Server-Sent Events, from the start or after ``Last-Event-ID``; ends after
        the run's terminal status, stays open while it is paused."""
        view = await service.get(run_id)  # 404 before the stream starts
        start = after if after is not None else -1
        if last_event_id is not None:
            try:
                start = int(last_event_id.strip())
            except ValueError:
                raise ServiceError(422, f"Last-Event-ID '{last_event_id}' is not an event number.") from None
        return StreamingResponse(
            _sse(service, view.run_id, start),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    @app.post(
        "/runs/{id}/decision",
        response_model=RunStarted,
        dependencies=guarded,
        responses=_ERRORS,
        tags=["runs"],
    )
    async def decide(run_id: RunPathId, body: Decision) -> RunStarted:
        """Answer the approval a paused run waits at (paused here, in the desktop or by `flowdesk run`)."""
        return RunStarted(runId=await service.decide(run_id, body.decision, body.note, output=body.output))

    @app.post(
        "/runs/{id}/cancel",
        response_model=RunStarted,
        dependencies=guarded,
        responses=_ERRORS,
        tags=["runs"],
    )
    async def cancel(run_id: RunPathId) -> RunStarted:
        """Cancel a run running here, or a paused one."""
        return RunStarted(runId=await service.cancel(run_id))

    @app.post("/hooks/{flowId}", response_model=RunStarted, responses=_ERRORS, tags=["webhooks"])
    async def webhook(
        flow_id: HookPathId,
        request: Request,
        credentials: Credentials,
        signature: str | None = Header(
            None, alias=SIGNATURE_HEADER, description="sha256=<hex HMAC-SHA256 of the body>"
        ),
    ) -> RunStarted:
        """Start a flow from a webhook: the JSON body's top-level keys become its variables. A flow
        with a webhook secret needs the signature header; any other needs the bearer token (when one
        is set)."""
        try:
            flow = service.flow(flow_id)
        except ServiceError:
            if token is not None:
                authorised(credentials)  # an unknown flow is named only to a caller with the token
            raise
        body = await request.body()
        wf = await asyncio.to_thread(service.library.load_path, flow.path)
        name, secret = webhook_secret(wf)
        if name is not None:
            if secret is None:
                raise ServiceError(
                    503,
                    f"The webhook secret '{name}' of flow '{flow_id}' is not set (an environment variable or "
                    "keyring entry of that name).",
                )
            if not signature_ok(secret, body, signature):
                raise ServiceError(401, f"The request is not signed with the flow's secret ({SIGNATURE_HEADER}).")
        elif token is not None:
            authorised(credentials)
        try:
            data = json.loads(body) if body.strip() else {}
        except (ValueError, UnicodeDecodeError):
            raise ServiceError(422, "The webhook body is not JSON.") from None
        if not isinstance(data, dict):
            raise ServiceError(422, "The webhook body must be a JSON object (its keys become the flow's variables).")
        return RunStarted(runId=await service.start(flow.id, variables=data, given_as="a key of the JSON body"))

    asgi: Any = app
    if cors_origins:
        asgi = CORSMiddleware(
            asgi,
            allow_origins=cors_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID", SIGNATURE_HEADER],
        )
    if token is None:
        asgi = _LocalHostsOnly(asgi)
    return _BodyLimit(asgi, max_body)


async def _sse(service: RunService, run_id: str, after: int) -> AsyncIterator[bytes]:
    quiet = 0.0
    async for item in service.follow(run_id, after):
        if item is None:
            quiet += 1
            if quiet * POLL_SECONDS >= KEEPALIVE_SECONDS:
                quiet = 0
                yield b": keep-alive\n\n"
            continue
        quiet = 0
        seq, ev = item
        data = json.dumps(ev.to_wire(), ensure_ascii=False)
        yield f"id: {seq}\ndata: {data}\n\n".encode()
