"""Serving: ``flowdesk serve`` (the HTTP API and webhooks, the ``serve`` extra) and ``flowdesk mcp
serve`` (library flows as MCP tools, the ``mcp`` extra).

Both serve the library's enabled flows through one :class:`engine.serving.RunService`, whose
runs go to the run history the desktop reads. Refused before anything listens (exit 2, the
reason printed): a missing extra (named, with its install command), a non-loopback address
without a token, a provider that cannot be set up, a port that cannot be bound.

The token may also come from the environment (``FLOWDESK_TOKEN``), which keeps it out of the
process list. Schedules: the server starts the library's schedule runner where one is
available (:func:`background_jobs`, the one startup hook for work that runs beside the API).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from engine.cli import EXIT_OK, EXIT_USAGE
from engine.cli.printer import print_err
from engine.cli.runs import open_store
from engine.flows.library import FlowLibrary, default_library
from engine.flows.schedules import ScheduleRunner
from engine.llm.registry import ProviderConfigError
from engine.serving.auth import is_loopback, split_host_port
from engine.serving.service import RunService

__all__ = ["cmd_serve", "cmd_mcp", "background_jobs", "run_schedules", "expire_approvals", "TOKEN_ENV"]

TOKEN_ENV = "FLOWDESK_TOKEN"
DEFAULT_PORT = 8377
MCP_DEFAULT_PORT = 8378


def _missing_extra(extra: str, modules: tuple[str, ...], what: str) -> bool:
    """True (the message printed) when a package of ``extra`` is not installed."""
    for name in modules:
        try:
            __import__(name)
        except ImportError:
            print_err(
                f"{what} needs the '{extra}' extra ({name} is not installed): pip install 'flowdesk[{extra}]' "
                f"(in a checkout: pip install -e '.[{extra}]')"
            )
            return True
    return False


def _token(args: argparse.Namespace) -> str | None:
    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV)
    return token or None


def _refuse_open_bind(host: str, token: str | None, option: str) -> bool:
    """True (the reason printed) when ``host`` is not loopback and no token is set."""
    if token is None and not is_loopback(host):
        print_err(
            f"refusing to listen on {host} without a token: anyone who can reach it could run your flows. "
            f"Pass --token TOKEN (or set {TOKEN_ENV}), or listen on 127.0.0.1 ({option})"
        )
        return True
    return False


def _service(args: argparse.Namespace) -> RunService | None:
    library = FlowLibrary(args.library) if args.library else default_library()
    store = open_store(required=True)
    if store is None:
        return None
    try:
        return RunService(
            library,
            store,
            provider=args.provider,
            model=args.model,
            base_url=args.base_url,
            max_visits=getattr(args, "max_visits", 25),
        )
    except ProviderConfigError as err:
        print_err(str(err))
        return None


def _bind(host: str, port: int) -> socket.socket | None:
    """A listening socket on ``host:port`` (port 0: any free port), or None with the reason printed."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
        sock.setblocking(False)
        return sock
    except OSError as err:
        print_err(f"cannot listen on {host}:{port}: {err.strerror or err}")
        return None


def background_jobs(service: RunService) -> list[Callable[[RunService], Awaitable[None]]]:
    """The work ``flowdesk serve`` runs beside its API (each a coroutine function of the service,
    started with the app and cancelled when it stops): the library's schedules, and the
    approvals whose deadline passes. Add here what else must run while the server does."""
    return [run_schedules, expire_approvals]


async def run_schedules(service: RunService) -> None:
    """Start the library's scheduled flows on time (engine/flows/schedules.py), recorded as any run."""

    async def start(schedule: Any) -> None:
        await service.start(schedule.flow_id, given_as=None)  # a schedule gives no variables

    await ScheduleRunner(service.library, start).run()


async def expire_approvals(service: RunService) -> None:
    """Paused runs past their approval's deadline take its ``onTimeout`` (RunService.expire_due)."""
    await service.expire_forever()


def cmd_serve(args: argparse.Namespace) -> int:
    if _missing_extra("serve", ("fastapi", "uvicorn"), "flowdesk serve"):
        return EXIT_USAGE
    token = _token(args)
    if _refuse_open_bind(args.host, token, "--host 127.0.0.1"):
        return EXIT_USAGE
    if not 0 <= args.port <= 65535:
        print_err(f"--port {args.port} is not a port number (0-65535; 0: any free port)")
        return EXIT_USAGE
    if args.max_body_bytes < 1:
        print_err("--max-body-bytes must be at least 1")
        return EXIT_USAGE
    service = _service(args)
    if service is None:
        return EXIT_USAGE
    sock = _bind(args.host, args.port)
    if sock is None:
        return EXIT_USAGE
    # Imported here: the serve extra's packages (FastAPI, uvicorn) load only when serving.
    import uvicorn

    from engine.serving.http_api import create_app

    app = create_app(
        service,
        token=token,
        max_body=args.max_body_bytes,
        cors_origins=args.cors_origin or None,
        background=background_jobs(service),
    )
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    port = sock.getsockname()[1]
    shown = f"[{args.host}]" if ":" in args.host else args.host
    auth = "a bearer token is required" if token else "no token: loopback only"
    print_err(f"serving on http://{shown}:{port} ({auth}; API documentation: http://{shown}:{port}/docs)")
    sys.stderr.flush()
    try:
        asyncio.run(server.serve(sockets=[sock]))
    except KeyboardInterrupt:
        pass
    return EXIT_OK


def cmd_mcp(args: argparse.Namespace) -> int:
    if getattr(args, "mcp_command", None) != "serve":
        print_err("usage: flowdesk mcp serve [--library DIR]... [--http HOST:PORT --token T]")
        return EXIT_USAGE
    if _missing_extra("mcp", ("mcp", "jsonschema"), "flowdesk mcp serve"):
        return EXIT_USAGE
    token = _token(args)
    sock = None
    host = ""
    if args.http is not None:
        try:
            host, port = split_host_port(args.http, MCP_DEFAULT_PORT)
        except ValueError as err:
            print_err(f"--http: {err}")
            return EXIT_USAGE
        if _refuse_open_bind(host, token, "--http 127.0.0.1:PORT"):
            return EXIT_USAGE
    elif args.token is not None:
        print_err("note: --token applies to --http only; over stdio the client that starts the server is trusted")
    service = _service(args)
    if service is None:
        return EXIT_USAGE
    if args.http is not None:
        sock = _bind(host, port)
        if sock is None:
            return EXIT_USAGE
    # Imported here: the mcp extra's packages load only when serving MCP.
    import anyio

    from engine.serving import mcp_server

    main: Any
    if sock is None:
        main = lambda: mcp_server.serve_stdio(service)  # noqa: E731
    else:
        main = lambda: mcp_server.serve_http(service, sock, host, token)  # noqa: E731
    try:
        anyio.run(main)
    except KeyboardInterrupt:
        pass
    return EXIT_OK
