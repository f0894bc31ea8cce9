"""``memsieve.Client``: the Python API over HTTP, for a ``memsieve serve`` server.

Same types (``Response`` with ``Result``s whose ``validity`` / ``admissibility`` annotations are
the library's dataclasses, ``Context``, ``Memory``, ``Exposure``) and same errors (``NotFound``,
``ConfigError``, ``StoreError``, ``AccessDenied`` / ``Unauthorized``) as the library in process.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from memsieve.admissibility import Admissibility
from memsieve.assemble.context import Context, ContextItem
from memsieve.errors import (
    AccessDenied,
    ConfigError,
    MemsieveError,
    MissingDependency,
    NotFound,
    StoreError,
    Unauthorized,
)
from memsieve.pipeline import Response
from memsieve.store.base import Exposure
from memsieve.trace import Trace
from memsieve.types import Memory, Query, Result
from memsieve.validity.stage import Validity

_ERRORS = {401: Unauthorized, 403: AccessDenied, 404: NotFound, 413: ConfigError,
           422: ConfigError, 503: StoreError}


class Client:
    """``Client("http://127.0.0.1:8080", "KEY")``; use as a context manager or ``close()``."""

    def __init__(self, base_url: str, api_key: str, *, timeout: float = 120.0,
                 transport: Any = None) -> None:
        try:
            import httpx
        except ImportError as err:
            raise MissingDependency("the client needs `pip install 'memsieve[service]'`") \
                from err
        self._http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout,
                                  headers={"Authorization": f"Bearer {api_key}"},
                                  transport=transport)

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        import httpx

        try:
            res = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as err:
            raise StoreError(f"cannot reach the memsieve service: {err}") from None
        if res.status_code >= 400:
            try:
                detail = res.json().get("detail")
            except ValueError:
                detail = res.text
            if isinstance(detail, list):  # FastAPI's validation errors: name the fields
                detail = "; ".join(".".join(str(p) for p in d.get("loc", ())[1:]) + ": "
                                   + str(d.get("msg")) for d in detail)
            raise _ERRORS.get(res.status_code, MemsieveError)(detail or res.reason_phrase)
        return res.json()

    # -- the API ---------------------------------------------------------------------------

    def add(self, memories: Iterable[Memory | Mapping[str, Any]]) -> list[str]:
        """Add a batch atomically; returns the ids (derived from the text where not given)."""
        items = [m.model_dump(mode="json") if isinstance(m, Memory) else dict(m)
                 for m in memories]
        return self._call("POST", "/v1/memories", json={"memories": items})["ids"]

    def get(self, namespace: str, memory_id: str) -> Memory:
        return Memory.model_validate(self._call(
            "GET", f"/v1/namespaces/{_seg(namespace)}/memories/{_seg(memory_id)}"))

    def list(self, namespace: str, *, page_size: int = 100) -> Iterator[Memory]:
        """Every memory of a namespace in store order (fetched a page at a time)."""
        cursor = None
        while True:
            params = {"namespace": namespace, "limit": page_size}
            if cursor:
                params["cursor"] = cursor
            page = self._call("GET", "/v1/memories", params=params)
            yield from (Memory.model_validate(m) for m in page["memories"])
            cursor = page["next_cursor"]
            if cursor is None:
                return

    def search(self, query: str | Query, namespace: str | None = None, *, k: int | None = None,
               **options: Any) -> Response:
        """As ``Pipeline.run``; options: intent, policy, validity, admissibility, unresolved."""
        body = _query_body(query, namespace, options) | ({"k": k} if k is not None else {})
        data = self._call("POST", "/v1/search", json=body)
        trace = Trace(excluded={e["memory_id"]: e["reason"] for e in data["excluded"]})
        results = [_result(r) for r in data["results"]]
        trace.exposed = [r.memory_id for r in results]
        q = query if isinstance(query, Query) else Query(text=query, namespace=body["namespace"])
        return Response(query=q, results=results, trace=trace)

    def context(self, query: str | Query, namespace: str | None = None, *, mode: str = "auto",
                budget: int = 600, **options: Any) -> Context:
        """As ``Assembler(...)(query)``: the prompt-ready context; the exposure is recorded."""
        body = _query_body(query, namespace, options) | {"mode": mode, "budget": budget}
        d = self._call("POST", "/v1/context", json=body)
        items = [ContextItem(i["memory_id"], i["text"], i["role"],
                             _validity(i.get("validity")), _admissibility(i.get("admissibility")))
                 for i in d["memories"]]
        return Context(d["query"], d["mode"], d["budget"], d["tokens"], items,
                       [(e["memory_id"], e["reason"]) for e in d["excluded"]], d["text"],
                       d["exposure_id"])

    def forget(self, namespace: str, memory_id: str, *, purge: bool = False) -> None:
        self._call("POST", f"/v1/namespaces/{_seg(namespace)}/memories/{_seg(memory_id)}/forget",
                   params={"purge": "true" if purge else "false"})

    def audit(self, namespace: str, *, memory_id: str | None = None,
              limit: int = 100) -> list[Exposure]:
        """The exposure log of a namespace (or of one memory), newest first."""
        params: dict[str, Any] = {"namespace": namespace, "limit": limit}
        if memory_id is not None:
            params["memory_id"] = memory_id
        out = []
        for e in self._call("GET", "/v1/exposures", params=params)["exposures"]:
            core = {"id", "time", "namespace", "query", "mode", "memory_ids", "excluded"}
            out.append(Exposure(e["namespace"], e["query"], e["mode"], e["memory_ids"],
                                [(x["memory_id"], x["reason"]) for x in e["excluded"]],
                                {k: v for k, v in e.items() if k not in core}, e["id"],
                                e["time"]))
        return out

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _seg(part: str) -> str:
    from urllib.parse import quote

    return quote(part, safe="")


def _query_body(query: str | Query, namespace: str | None, options: dict) -> dict:
    if isinstance(query, Query):
        body = query.model_dump(mode="json", exclude={"time"})
        body["query"] = body.pop("text")
    else:
        if namespace is None:
            raise ConfigError("namespace is required with a query string")
        body = {"query": query, "namespace": namespace}
    policy = options.get("policy")
    if policy is not None and not isinstance(policy, Mapping):
        options["policy"] = policy.model_dump()
    return body | {k: v for k, v in options.items() if v is not None}


def _validity(v: Mapping | None) -> Validity | None:
    return Validity(**v) if v else None


def _admissibility(a: Mapping | None) -> Admissibility | None:
    return Admissibility(**(dict(a) | {"reasons": tuple(a["reasons"])})) if a else None


def _result(r: Mapping[str, Any]) -> Result:
    annotations = {}
    if r.get("validity"):
        annotations["validity"] = _validity(r["validity"])
    if r.get("admissibility"):
        annotations["admissibility"] = _admissibility(r["admissibility"])
    return Result(rank=r["rank"], memory_id=r["memory_id"], score=r["score"], text=r["text"],
                  namespace=r["namespace"], session_id=r["session_id"], speaker=r["speaker"],
                  timestamp=r["timestamp"], scores=r["scores"], annotations=annotations)
