"""HTTP plumbing: authentication, fault injection, rate-limit headers and the request log,
around the route table."""

from __future__ import annotations

import json
import threading
import traceback
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .errors import ApiError, bad_credentials, error_body, problems_parsing_json, requires_authentication
from .faults import FaultPlan
from .model import Account
from .rate_limits import RateLimits
from .routes import ApiRequest, ApiResponse, Routes


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any  # the decoded JSON request body, None when there was none
    status: int  # what the client was answered
    injected: bool  # answered by an injected fault


class ApiServer:
    """Everything between the socket and the routes; shared by the handler threads."""

    def __init__(self, routes: Routes, faults: FaultPlan, rate_limits: RateLimits, token: str, user: Account) -> None:
        self.routes = routes
        self.faults = faults
        self.rate_limits = rate_limits
        self.token = token
        self.user = user
        self.log_lock = threading.Lock()
        self.log: list[RecordedRequest] = []
        self.internal_errors: list[str] = []

    def respond(self, method: str, target: str, authorization: str | None, raw_body: bytes) -> ApiResponse:
        url = urlsplit(target)
        query = parse_qs(url.query, keep_blank_values=True)
        headers = self.rate_limits.spend(RateLimits.resource_for(url.path))
        body: Any = None
        fault = None
        try:
            self._authenticate(authorization)
            body = _decode_json(raw_body)
        except ApiError as error:
            response = ApiResponse(error.status, error.body, error.headers)
        else:
            fault = self.faults.take(method, url.path)
            if fault is None or fault.applied:
                response = self._route(ApiRequest(method, url.path, query, body, self.user))
            if fault is not None:
                response = ApiResponse(fault.status, fault.body, dict(fault.headers))
        response.headers = {**headers, **response.headers}
        with self.log_lock:
            self.log.append(RecordedRequest(method, url.path, query, body, response.status, fault is not None))
        return response

    def _authenticate(self, authorization: str | None) -> None:
        if not authorization:
            raise requires_authentication()
        scheme, _, credentials = authorization.partition(" ")
        if scheme.lower() not in ("token", "bearer") or credentials.strip() != self.token:
            raise bad_credentials()

    def _route(self, request: ApiRequest) -> ApiResponse:
        try:
            return self.routes.dispatch(request)
        except ApiError as error:
            return ApiResponse(error.status, error.body, error.headers)
        except Exception:
            # A bug in the double must fail the test that hit it, not pass as a GitHub outage.
            self.internal_errors.append(traceback.format_exc())
            return ApiResponse(500, error_body(500, "Internal error in the GitHub double"))


def _decode_json(raw_body: bytes) -> Any:
    if not raw_body:
        return None
    try:
        return json.loads(raw_body)
    except ValueError:
        raise problems_parsing_json() from None


class _Handler(BaseHTTPRequestHandler):
    # Keep-alive like api.github.com, so PyGithub's connection pool behaves as in production.
    protocol_version = "HTTP/1.1"
    # Idle keep-alive connections give up after this, so no handler thread outlives its test.
    timeout = 5
    # TCP_NODELAY: the headers and the body go out in two writes, and with Nagle's algorithm the body waited for
    # the client's delayed ACK of the headers, 40 ms a request on Linux loopback (half the bot tests' time).
    disable_nagle_algorithm = True
    server: _HttpServer

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw_body = self.rfile.read(length) if length else b""
        response = self.server.api.respond(self.command, self.path, self.headers.get("Authorization"), raw_body)
        payload = b"" if response.body is None else json.dumps(response.body).encode()
        self.send_response(response.status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced: the request log is the record tests assert on."""


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    api: ApiServer


class HttpThread:
    """An HTTP server bound to an ephemeral port at once (so URLs can be built), served later."""

    def __init__(self, host: str) -> None:
        self._server = _HttpServer((host, 0), _Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="github-double", daemon=True
        )

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def start(self, api: ApiServer) -> None:
        self._server.api = api
        self._thread.start()

    def stop(self) -> None:
        # shutdown() waits for serve_forever() to notice, so it would hang on a never-started server.
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()
