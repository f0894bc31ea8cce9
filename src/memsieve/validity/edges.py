"""Write-time candidate edges of the validity layer: which earlier memories a new one may
overturn, found once when it is added, so a query judges only results that have one.

When a memory (the *source*) is added, its candidates are the earlier memories of its
namespace (``is_later(source, target)``; equal times that session and turn cannot order go by
the order the store received them) by the same speaker, or any when either has none,
among its ``SCAN`` most similar, whose embedding cosine with it is at least ``floor``; the
``per_source`` closest become edges ``(source, target, score)``. The score is query-blind:
the packaged verifier's with the target standing in for the query (``blind_pairs``) when the
store holds the vectors its similarity floor was chosen on (MiniLM), else the cosine. At query
time the validity stage's ``edges`` source policy judges a top-k result only against the
sources of its edges whose score reaches ``edge_threshold`` (chosen on generator validation
data to keep 95% of the positives), with the query-conditioned verifier, and skips results
without one: on LoCoMo chat 16% of the edges pass, so most results cost no verifier pass.
Purging either end removes the edge; rewriting a memory's text drops its edges and finds
new ones, both its own and those of the later memories that pointed at its old text or may
point at its new one; a memory written after later ones (an import of old chat) is found by
them the same way (the store replaces their outgoing edges in the same transaction). A
forgotten source is left out when edges are read.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from memsieve.types import Memory, State, content

FLOOR = 0.414  # the verifier's source similarity floor (MiniLM cosine, generator validation)
PER_SOURCE = 2
SCAN = 64  # most similar memories looked at per source (bounds a bulk ingest's work)


@dataclasses.dataclass(frozen=True)
class Edge:
    source: str
    target: str
    score: float


@dataclasses.dataclass(frozen=True)
class Held:
    """What a namespace already holds, as the edge finder needs it: the ids and vectors of
    its searchable memories, a way to read the records of some rows (only candidates are
    read, so a write into a big namespace does not read all of it), and the sources of the
    stored edges into some memories (what a rewrite of them must re-link)."""

    ids: Sequence[str]
    matrix: np.ndarray
    fetch: Callable[[Sequence[int]], list[Memory]]
    incoming: Callable[[Sequence[str]], set[str]] = lambda ids: set()  # sources of their edges
    # the stored score of each (source, target) edge out of some sources
    outgoing: Callable[[Sequence[str]], dict[tuple[str, str], float]] = lambda ids: {}

    @classmethod
    def empty(cls) -> Held:
        return cls([], np.zeros((0, 0), np.float32), lambda rows: [])


def spoken(memory: Memory) -> str:
    """A memory as the verifier reads it: ``"speaker: text"``, the form it was trained on
    (every generated turn names its speaker) and the form the dataset loaders store. A memory
    written with a ``speaker`` and bare text (``{"speaker": "user", "text": "I moved"}``, as
    an agent adds its user's turns) gets the name put in front; text that already starts
    with it is left as it is."""
    speaker = (memory.speaker or "").strip()
    if not speaker or memory.text.startswith(f"{speaker}:"):
        return memory.text
    return f"{speaker}: {memory.text}"


def _later(source: Memory, target: Memory, written_after: bool) -> bool:
    from memsieve.validity.stage import is_later

    return is_later(source, target, written_after=written_after)


Judge = Callable[[Sequence[tuple[str, str]]], np.ndarray]  # (source, target) texts -> scores


def blind_pairs(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """Verifier triples without a query: the target stands in for it ("is what this memory
    says still true, given the source?")."""
    return [(target, source, target) for source, target in pairs]


def verifier_judge(verifier: Any) -> Judge:
    return lambda pairs: verifier.score(blind_pairs(pairs)) if pairs else np.zeros(0)


def default_judge(model: str | None) -> Judge | None:
    """The packaged verifier as a query-blind judge for a store embedded with ``model``: only
    for the model its similarity floor and edge threshold were chosen on (else None: the
    cosine is the score, and no edge threshold applies)."""
    from memsieve.embed import MiniLMEncoder
    from memsieve.errors import MissingDependency

    name = (model or "").split(":")[0]
    if name != MiniLMEncoder.name:  # the only model a released verifier was calibrated on;
        return None  # decided before torch is imported, so other stores' writes stay light
    from memsieve.validity.verifier import packaged_config, packaged_verifier

    if name != packaged_config().get("similarity_model"):
        return None
    try:
        return verifier_judge(packaged_verifier())
    except MissingDependency:  # the base model package is not installed
        return None


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b.T`` (unit rows: cosines), by torch when a judge has loaded it. numpy's OpenBLAS
    runs a product of several rows on its own threads, whose idle threads then spin for a
    while and, on 2 cores, starved the verifier pass that follows (a rewrite's judge call took
    ~4x as long); torch's product runs on the threads the verifier uses next."""
    torch = sys.modules.get("torch")
    if torch is None or len(a) < 2:
        return a @ b.T
    a, b = (np.require(x, np.float32, ("C", "W")) for x in (a, b))  # torch shares the memory
    return (torch.from_numpy(a) @ torch.from_numpy(b).T).numpy()


def candidate_edges(
    new: Sequence[Memory],
    new_vectors: np.ndarray,
    held: Held | None = None,
    *,
    judge: Judge | None = None,
    floor: float = FLOOR,
    per_source: int = PER_SOURCE,
    chunk: int = 256,
) -> list[Edge]:
    """Edges from each of ``new`` (one namespace; unit vectors) to the memories it may
    overturn among those ``held`` (a stored copy of a rewritten memory is replaced by its new
    copy) and the rest of ``new``; scored by ``judge`` when given, else by the cosine.

    A write also re-links the held memories that may overturn what it wrote: every source that
    pointed at a rewritten memory's old text (``Held.incoming``), and every later one that may
    point at a written memory (its new text, or an old memory written late), gets its edges
    found again as ``rebuild`` would find them, so a typo fix does not hide a later update.
    The store replaces the outgoing edges of every source this returns. A re-linked source's
    edge it already had, to a memory this write did not rewrite, keeps its stored score: the
    judge reads only the pairs whose texts are new to it."""
    if not len(new):
        return []
    held = held or Held.empty()
    new_vectors = np.asarray(new_vectors, np.float32)
    n_held = len(held.ids)
    if n_held and held.matrix.shape[1] != new_vectors.shape[1]:
        return []  # another model's vectors: the store refuses the batch with a clear error
    matrix = np.concatenate([held.matrix, new_vectors]) if n_held else new_vectors
    rewritten = {m.id for m in new}
    stale = np.array([mid in rewritten for mid in held.ids] + [False] * len(new))
    records: dict[int, Memory] = {n_held + i: m for i, m in enumerate(new)}
    # write order of each row, for equal times nothing else orders: a rewritten memory keeps
    # its stored place (as the store keeps its seq), so ``rebuild`` finds the same edges
    row_of = {mid: r for r, mid in enumerate(held.ids)}
    written = np.array(list(range(n_held)) + [row_of.get(m.id, n_held + i)
                                                 for i, m in enumerate(new)])
    sources = list(range(n_held, n_held + len(new)))
    relinked = _relinked(new, matrix, stale, held, row_of, records, written, floor, chunk)
    known = held.outgoing([held.ids[r] for r in relinked]) if relinked and judge else {}
    out: list[Edge] = []
    texts: list[tuple[str, str] | None] = []  # None: the stored score stands
    order = sources + sorted(relinked)
    for start in range(0, len(order), chunk):  # bounded memory for a bulk ingest
        rows = order[start : start + chunk]
        sims = _cosines(matrix[rows], matrix)
        sims[:, stale] = -np.inf
        near = [_nearest(row, floor) for row in sims]
        wanted = sorted(({int(j) for c in near for j in c} | set(rows)) - set(records))
        records.update(zip(wanted, held.fetch(wanted), strict=True))
        for i, r in enumerate(rows):
            source = records[r]
            if source.timestamp is None:
                continue
            found = []
            for j in near[i]:
                target = records[int(j)]
                if source.speaker and target.speaker and source.speaker != target.speaker:
                    continue
                if _later(source, target, bool(written[r] > written[j])):
                    found.append((Edge(source.id, target.id, round(float(sims[i, j]), 6)),
                                  (spoken(source), spoken(target))))
                    if len(found) == per_source:
                        break
            if relinked.get(r) is False and not {e.target for e, _ in found} & rewritten:
                continue  # a rewrite did not reach it: its stored edges stand
            for e, pair in found:
                kept = (e.source, e.target) in known and e.target not in rewritten
                out.append(dataclasses.replace(e, score=known[(e.source, e.target)])
                           if kept else e)
                texts.append(None if kept else pair)
    if judge is not None and out:
        todo = [i for i, t in enumerate(texts) if t is not None]
        scores = dict(zip(todo, judge([texts[i] for i in todo]) if todo else [], strict=True))
        out = [dataclasses.replace(e, score=round(float(scores[i]), 6)) if i in scores else e
               for i, e in enumerate(out)]
    return out


def _nearest(sims: np.ndarray, floor: float) -> np.ndarray:
    """Rows among the ``SCAN`` most similar whose cosine reaches ``floor``, most similar
    first (ties by row)."""
    cand = np.argpartition(-sims, SCAN)[:SCAN] if len(sims) > SCAN else np.arange(len(sims))
    cand = cand[sims[cand] >= floor]
    return cand[np.lexsort((cand, -sims[cand]))]


def _relinked(new: Sequence[Memory], matrix: np.ndarray, stale: np.ndarray, held: Held,
              row_of: dict[str, int], records: dict[int, Memory], written: np.ndarray,
              floor: float, chunk: int) -> dict[int, bool]:
    """Held rows whose outgoing edges this write may change: True for a source that pointed
    at the old text of a memory the write rewrites (its edges are found again), False for a
    later one among the ``SCAN`` most similar to a written memory (kept if it now points at
    it: a rewrite, or an earlier memory written late, as an import of an old chat is)."""
    n_held = len(held.ids)
    if not n_held:
        return {}
    rewrites = [i for i, m in enumerate(new) if m.id in row_of]
    before = held.fetch([row_of[new[i].id] for i in rewrites])
    same = {i for i, m in zip(rewrites, before, strict=True)  # a re-ingest, not a rewrite
            if content(m) == content(new[i])}
    changed = [new[i].id for i in rewrites if i not in same]
    out: dict[int, bool] = {}
    for start in range(0, len(new), chunk):
        sims = _cosines(matrix[n_held + start : n_held + start + chunk], matrix[:n_held])
        sims[:, stale[:n_held]] = -np.inf
        near = [_nearest(row, floor) for row in sims]
        wanted = sorted({int(j) for c in near for j in c} - set(records))
        records.update(zip(wanted, held.fetch(wanted), strict=True))
        for i, cand in enumerate(near):
            if start + i in same:
                continue  # the same text again: the store keeps what pointed at it
            target, at = new[start + i], written[n_held + start + i]
            for j in cand:
                if _later(records[int(j)], target, bool(j > at)):
                    out.setdefault(int(j), False)
    for sid in held.incoming(changed) if changed else ():
        j = row_of.get(sid)
        if j is not None and not stale[j]:
            out[j] = True
    return out


Reader = Callable[[str], Held]


def stored(store: Any) -> Reader:
    """A namespace's searchable memories as the store holds them."""

    def read(namespace: str) -> Held:
        ids, matrix = store.vectors(namespace)
        state = {}

        def fetch(rows: Sequence[int]) -> list[Memory]:
            if rows and not state:
                state.update({m.id: m for m in store.list(namespace)})
            return [state[ids[r]] for r in rows]

        return Held(ids, matrix, fetch, lambda mids: _sources(store, namespace, mids),
                    lambda mids: _scores(store, namespace, mids))

    return read


def _sources(store: Any, namespace: str, target_ids: Sequence[str]) -> set[str]:
    return {e.source for es in store.edges(namespace, target_ids).values() for e in es}


def _scores(store: Any, namespace: str, source_ids: Sequence[str]) -> dict[tuple[str, str],
                                                                             float]:
    return {(e.source, e.target): round(e.score, 6)
            for e in store.edges_from(namespace, source_ids)}


def cached(cache: Any) -> Reader:
    """The same from a live ``IndexCache``: the vectors are already in memory and only the
    candidates' records are read."""

    def read(namespace: str) -> Held:
        with cache.store.snapshot():
            index = cache.get(namespace)
            return Held(list(index.ids), index.matrix.copy(),
                        lambda rows: index.memories(cache.store, rows),
                        lambda mids: _sources(cache.store, namespace, mids),
                        lambda mids: _scores(cache.store, namespace, mids))

    return read


def rebuild(store: Any, namespace: str, judge: Judge | None = None) -> int:
    """Recompute a namespace's edges from what the store holds and replace them (``memsieve
    migrate``: a store written before edges existed). Returns how many there are."""
    ids, matrix = store.vectors(namespace)
    by_id = {m.id: m for m in store.list(namespace) if m.state is not State.forgotten}
    rows = [i for i, mid in enumerate(ids) if mid in by_id]
    found = candidate_edges([by_id[ids[i]] for i in rows], matrix[rows],
                            judge=judge) if rows else []
    store.set_edges(namespace, found)
    return len(found)


def batch_edges(memories: Sequence[Memory], vectors: np.ndarray, read: Reader,
                **kw: Any) -> dict[str, list[Edge]]:
    """The write-time edges of a batch about to be added, by namespace."""
    by_ns: dict[str, list[int]] = {}
    for i, m in enumerate(memories):
        by_ns.setdefault(m.namespace, []).append(i)
    vectors = np.asarray(vectors, np.float32)
    return {ns: candidate_edges([memories[i] for i in idx], vectors[idx], read(ns), **kw)
            for ns, idx in by_ns.items()}


__all__ = ["FLOOR", "PER_SOURCE", "SCAN", "Edge", "Held", "Judge", "batch_edges", "blind_pairs",
           "cached", "candidate_edges", "default_judge", "rebuild", "stored", "verifier_judge"]
