"""The REST service (FastAPI): every request is bound to the namespaces its API key grants.

No key or an unknown key → 401; a namespace the key does not grant → 403 with the same answer
whether or not it exists; a bad body → 422 naming the field; a body over ``max_body`` bytes or
a batch over ``MAX_BATCH`` memories → 413. OpenAPI at ``/docs``; the inspector at ``/inspect``.
"""

from __future__ import annotations

from importlib import resources
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from memsieve import __version__
from memsieve.errors import (
    AccessDenied,
    ConfigError,
    MemsieveError,
    NotFound,
    StoreError,
    Unauthorized,
)
from memsieve.service.core import BatchTooLarge, MemoryService
from memsieve.service.keys import Keys

MAX_BODY = 8 * 1024 * 1024  # bytes


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AddBody(_Body):
    memories: list[dict[str, Any]] = Field(description="Memory objects, as in `ingest jsonl`.")


class PolicyBody(_Body):
    purposes: list[str] = []
    deny: list[str] = []


class SearchBody(_Body):
    query: str
    namespace: str
    k: int | None = Field(default=None, ge=1)
    intent: Literal["current", "history", "unknown"] | None = None
    policy: PolicyBody | None = None
    validity: Literal["off", "context", "demote"] | None = None
    admissibility: Literal["off", "annotate", "enforce"] | None = None
    unresolved: Literal["surface", "exclude"] | None = None


class ContextBody(SearchBody):
    mode: Literal["auto", "lookup", "compose", "replay", "topk"] = "auto"
    budget: int = Field(default=600, ge=1, le=100_000)


class Caller:
    """The namespaces the request's key grants."""

    def __init__(self, namespaces: frozenset[str]) -> None:
        self.namespaces = namespaces

    def check(self, namespace: str) -> str:
        if namespace not in self.namespaces:
            raise AccessDenied("this key does not grant that namespace")
        return namespace


def caller(request: Request, authorization: Annotated[str | None, Header()] = None) -> Caller:
    """The request's grant, from ``Authorization: Bearer KEY``."""
    scheme, _, token = (authorization or "").partition(" ")
    keys: Keys = request.app.state.keys
    granted = keys.namespaces(token.strip()) if scheme.lower() == "bearer" else None
    if granted is None:
        raise Unauthorized("a valid API key is required: Authorization: Bearer KEY")
    return Caller(granted)


Auth = Annotated[Caller, Depends(caller)]


def create_app(service: MemoryService, keys: Keys, *, max_body: int = MAX_BODY) -> FastAPI:
    """The app over one ``MemoryService`` (its store and models) and one set of keys."""
    app = FastAPI(title="memsieve", version=__version__,
                  description="Long-term memory for agents: relevant, still true, allowed here.")

    app.state.keys = keys
    app.add_middleware(BodyLimit, max_body=max_body)

    @app.exception_handler(MemsieveError)
    async def memsieve_error(request: Request, err: MemsieveError) -> JSONResponse:
        status = (413 if isinstance(err, BatchTooLarge) else 401 if isinstance(err, Unauthorized)
                  else 403 if isinstance(err, AccessDenied) else 404 if isinstance(err, NotFound)
                  else 422 if isinstance(err, ConfigError)
                  else 503 if isinstance(err, StoreError) else 400)
        response = _error(status, str(err))
        if status == 401:
            response.headers["WWW-Authenticate"] = "Bearer"
        return response

    @app.get("/v1/health")
    def health() -> dict:
        return {"status": "ok", "version": __version__}

    @app.get("/v1/namespaces")
    def namespaces(who: Auth) -> dict:
        """The namespaces this key grants."""
        return {"namespaces": sorted(who.namespaces)}

    @app.post("/v1/memories")
    def add(body: AddBody, who: Auth) -> dict:
        """Add a batch of memories atomically (all or none)."""
        for i, item in enumerate(body.memories):
            ns = item.get("namespace")
            if not isinstance(ns, str):
                raise ConfigError(f"memories[{i}].namespace: a string is required")
            who.check(ns)
        return service.add(body.memories)

    @app.get("/v1/memories")
    def page(who: Auth, namespace: str, limit: Annotated[int, Query(ge=1, le=1000)] = 100,
             cursor: str | None = None) -> dict:
        """A namespace's memories in store order, a page at a time."""
        return service.page(who.check(namespace), cursor=cursor, limit=limit)

    @app.get("/v1/namespaces/{namespace}/memories/{memory_id}")
    def get(namespace: str, memory_id: str, who: Auth) -> dict:
        return service.get(who.check(namespace), memory_id)

    @app.delete("/v1/namespaces/{namespace}/memories/{memory_id}")
    def delete(namespace: str, memory_id: str, who: Auth) -> dict:
        """Purge: text, vector, postings and units gone; the audit keeps a tombstone."""
        return service.forget(who.check(namespace), memory_id, purge=True)

    @app.post("/v1/namespaces/{namespace}/memories/{memory_id}/forget")
    def forget(namespace: str, memory_id: str, who: Auth, purge: bool = False) -> dict:
        """Forget (kept for the audit, never returned) or, with ``purge=true``, purge."""
        return service.forget(who.check(namespace), memory_id, purge=purge)

    @app.post("/v1/search")
    def search(body: SearchBody, who: Auth) -> dict:
        who.check(body.namespace)
        return service.search(body.model_dump(exclude_none=True))

    @app.post("/v1/context")
    def context(body: ContextBody, who: Auth) -> dict:
        """A prompt-ready context under a token budget; the exposure is recorded."""
        who.check(body.namespace)
        return service.context(body.model_dump(exclude_none=True))

    @app.get("/v1/exposures")
    def exposures(who: Auth, namespace: str, memory_id: str | None = None,
                  limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> dict:
        """Which prompts received which memory ids (never text), newest first."""
        return {"exposures": service.exposures(who.check(namespace), memory_id=memory_id,
                                               limit=limit)}

    @app.get("/inspect", response_class=HTMLResponse, include_in_schema=False)
    def inspect() -> str:
        return resources.files("memsieve.service").joinpath("inspect.html").read_text()

    return app


class BodyLimit:
    """Refuse a body over ``max_body`` bytes (413) before reading it: the declared length is
    checked, and a chunked body (no declared length) is refused with 411, so no request can
    make the server buffer more than the limit."""

    def __init__(self, app: Any, *, max_body: int) -> None:
        self.app, self.max_body = app, max_body

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] in ("POST", "PUT", "PATCH"):
            headers = dict(scope["headers"])
            size = headers.get(b"content-length")
            if size is None:
                if b"transfer-encoding" not in headers:  # no body at all
                    return await self.app(scope, receive, send)
                return await _error(411, "a Content-Length header is required")(scope, receive,
                                                                                send)
            if not size.isdigit() or int(size) > self.max_body:
                return await _error(413, f"request body over {self.max_body} bytes")(
                    scope, receive, send)
        await self.app(scope, receive, send)


def _error(status: int, detail: str) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status)
