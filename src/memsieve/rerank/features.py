"""Features of the v1 reranker (pipeline step 3), computed by one function for training, eval
and the product stage, so the three can never drift apart.

A pool of ``k`` first-stage candidates becomes the query vector ``q`` (d,), the memory vectors
``m`` (k, d) and a (k, F) matrix of cheap scalar features, columns in ``FEATURES`` order:

- scores: raw dense cosine; dense, BM25 and fused scores min-max normalised within the pool;
- rank: rank in the pool by fused, dense and BM25 score, as ``rank / (k - 1)`` (0 = best), and
  ``1 / (1 + fused rank)``, which separates the head of the pool;
- lexical: over content tokens (regex words, BM25's stop words out, Snowball-stemmed): the share
  of query tokens the memory holds (plain and IDF-weighted, IDF over the namespace), their
  Jaccard similarity, the share of query bigrams it holds, and whether the memory's speaker is
  named in the query;
- window: the best mean pool-normalised fused score of a window of ``window`` consecutive turns
  (store order) that contains the candidate, and the dense cosine of its previous and next turn;
- context: the best pool-normalised fused score in the candidate's session, and its cosine to
  the mean vector of the pool's top ``PRF_DEPTH`` (pseudo-relevance feedback);
- query (the same for the whole pool, so the model can condition on the question): the number
  of query tokens (/16, capped at 1) and when / where / who / what / how / would flags;
- memory: the memory's number of distinct tokens (/32, capped), whether it mentions a time
  (a number, a weekday, a month, "yesterday", "last week", ...) and whether it asks a question.

Turns outside the pool enter the window mean at the pool's lowest fused score (0 after
normalisation): they are known to score no higher, so the feature needs the pool only and the
product stage computes it from the retriever's candidates without rescoring the namespace. When
the pool holds the whole namespace this is the plain windowed mean of the fused score.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from memsieve.retrieve.bm25 import Analyzer
from memsieve.retrieve.fusion import minmax
from memsieve.types import Memory

FEATURE_GROUPS: dict[str, tuple[str, ...]] = {
    "scores": ("dense", "dense_pool", "bm25_pool", "fused_pool"),
    "rank": ("rank_fused", "rank_dense", "rank_bm25", "rr_fused"),
    "lexical": ("overlap", "overlap_idf", "jaccard", "bigram_recall", "speaker_in_query"),
    "window": ("window", "dense_prev", "dense_next"),
    "context": ("session_best", "prf"),
    "query": ("q_len", "q_when", "q_where", "q_who", "q_what", "q_how", "q_would"),
    "memory": ("m_len", "m_time", "m_question"),
}
FEATURES: tuple[str, ...] = tuple(f for group in FEATURE_GROUPS.values() for f in group)
WINDOW = 3

_WH = {
    "q_when": re.compile(r"\b(when|what (year|month|day|date|time)|how long)\b"),
    "q_where": re.compile(r"\bwhere\b"),
    "q_who": re.compile(r"\b(who|whom|whose)\b"),
    "q_what": re.compile(r"\b(what|which)\b"),
    "q_how": re.compile(r"\bhow\b"),
    "q_would": re.compile(r"\b(would|could|might|likely|probably)\b"),
}
_TIME = re.compile(
    r"\b(\d+|yesterday|today|tomorrow|tonight|ago|last|next|recently|soon|week|weekend|month|"
    r"year|morning|evening|night|(mon|tues|wednes|thurs|fri|satur|sun)day|january|february|"
    r"march|april|may|june|july|august|september|october|november|december|spring|summer|"
    r"autumn|fall|winter)s?\b"
)
PRF_DEPTH = 5  # pool head whose mean vector is the pseudo-relevance centroid


def _bigrams(tokens: Sequence[str]) -> list[str]:
    return [a + "\x00" + b for a, b in zip(tokens, tokens[1:], strict=False)]


@dataclasses.dataclass(frozen=True)
class QueryTerms:
    """A query as the features see it: its vector and its terms against one namespace."""

    vector: np.ndarray  # (d,) float32, L2-normalised
    unigrams: np.ndarray  # ids of distinct query tokens the namespace knows
    n_unigrams: int  # distinct query tokens, known or not
    idf_total: float  # summed IDF of the distinct query tokens (unknown ones at the top IDF)
    bigrams: np.ndarray
    n_bigrams: int
    speakers: np.ndarray  # (n_speakers,) bool: speaker named in the query
    flags: np.ndarray  # (len(FEATURE_GROUPS["query"]),) query-level features


class NamespaceFeatures:
    """What the features need of one namespace: vectors, terms, speakers, sessions, order.

    Rows are in store order, so row ``i`` and ``i + 1`` are consecutive turns. Built at once
    from a list (``build``: training, evaluation), or kept beside a live ``NamespaceIndex`` and
    moved along with its deltas (``follow``): a write costs the new rows' terms, never a
    rebuild. Term, speaker and session numbers are handed out in order of first sight and never
    reused; a term no memory holds any more keeps its number with document frequency 0, which
    scores exactly as an unseen term.
    """

    def __init__(self, *, tokenizer: Analyzer | None = None) -> None:
        self.tokenizer = tokenizer or Analyzer()
        self.position: Mapping[str, int] = {}
        self.matrix = np.zeros((0, 0), dtype=np.float32)
        self.vocab: dict[str, int] = {}
        self.uni: list[np.ndarray] = []  # per row: ids of its distinct tokens (ascending)
        self.bi: list[np.ndarray] = []  # per row: ids of its distinct bigrams
        self.speaker_terms: list[frozenset[str]] = []
        self.revision = 0
        self._df = np.zeros(0, dtype=np.int64)
        self._speakers: dict[str, int] = {}
        self._sessions: dict[str, int] = {}
        self._seqs: list[int] = []
        # per row: (speaker number, session number, memory traits)
        self._rows: list[tuple[int, int, tuple[float, float, float]]] = []
        self._arrays: dict[str, np.ndarray] | None = None  # derived once per change

    @classmethod
    def build(
        cls, memories: Sequence[Memory], matrix: np.ndarray, *, tokenizer: Analyzer | None = None
    ) -> NamespaceFeatures:
        """Index ``memories`` (store order) and their (n, d) vectors."""
        if len(memories) != len(matrix):
            raise ValueError(f"{len(memories)} memories but {len(matrix)} vectors")
        out = cls(tokenizer=tokenizer)
        out._append(memories, [0] * len(memories))
        out.position = {m.id: i for i, m in enumerate(memories)}
        out.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        return out

    @classmethod
    def of_index(cls, index: Any, store: Any) -> NamespaceFeatures:
        """Features of a live ``NamespaceIndex`` at its revision (read once, then followed)."""
        out = cls()
        out._append(index.all_memories(store), index.seqs.tolist())
        out._attach(index)
        return out

    def follow(self, delta: Any, index: Any, store: Any) -> None:
        """Move to the live index's revision after ``delta`` (a ``store.base.Delta``)."""
        self._arrays = None
        # the usual write only appends new seqs: then no row is touched and the O(n) set
        # below is not built
        appended = not len(delta.removed) and (
            not self._seqs or not len(delta.seqs) or int(delta.seqs[0]) > self._seqs[-1])
        touched = set(delta.removed.tolist()) | set(delta.seqs.tolist())
        if not appended and touched & set(self._seqs):
            keep = [i for i, s in enumerate(self._seqs) if s not in touched]
            for i in set(range(len(self._seqs))) - set(keep):
                np.subtract.at(self._df, self.uni[i], 1)
                np.subtract.at(self._df, self.bi[i], 1)
            self.uni = [self.uni[i] for i in keep]
            self.bi = [self.bi[i] for i in keep]
            self._rows = [self._rows[i] for i in keep]
            self._seqs = [self._seqs[i] for i in keep]
        new = delta.seqs.tolist()
        if new:
            rows = np.searchsorted(index.seqs, delta.seqs)
            memories = index.memories(store, rows)
            if self._seqs and new[0] < self._seqs[-1]:  # back in the searchable set: re-sort
                self._append(memories, new)
                order = np.argsort(self._seqs, kind="stable")
                for name in ("uni", "bi", "_rows", "_seqs"):
                    items = getattr(self, name)
                    setattr(self, name, [items[i] for i in order])
            else:
                self._append(memories, new)
        self._attach(index)

    def _attach(self, index: Any) -> None:
        self.position, self.matrix, self.revision = index.rows, index.matrix, index.revision
        if len(self._seqs) != index.size:
            raise RuntimeError("v1 features fell out of step with the index")

    def _append(self, memories: Sequence[Memory], seqs: Sequence[int]) -> None:
        tokens = self.tokenizer([m.text for m in memories])
        for m, toks, seq in zip(memories, tokens, seqs, strict=True):
            uni = self._ids(toks)
            bi = self._ids(_bigrams(toks))
            self.uni.append(uni)
            self.bi.append(bi)
            speaker = -1
            if m.speaker:
                if m.speaker not in self._speakers:
                    self._speakers[m.speaker] = len(self.speaker_terms)
                    self.speaker_terms.append(frozenset(self.tokenizer([m.speaker])[0]))
                speaker = self._speakers[m.speaker]
            session = self._sessions.setdefault(m.session_id or m.id, len(self._sessions))
            traits = (min(len(uni), 32) / 32, float(bool(_TIME.search(m.text.lower()))),
                      float("?" in m.text))
            self._rows.append((speaker, session, traits))
            self._seqs.append(seq)
        self._arrays = None

    def _ids(self, terms: Sequence[str]) -> np.ndarray:
        """Ids of the distinct ``terms`` (new ones numbered), their document frequency + 1."""
        ids = np.array(sorted({self.vocab.setdefault(t, len(self.vocab)) for t in terms}),
                       dtype=np.int64)
        if len(self.vocab) > len(self._df):
            grown = np.zeros(max(2 * len(self.vocab), 1024), dtype=np.int64)
            grown[: len(self._df)] = self._df
            self._df = grown
        np.add.at(self._df, ids, 1)
        return ids

    def _derived(self) -> dict[str, np.ndarray]:
        if self._arrays is None:
            n = len(self._rows)
            self._arrays = {
                "speaker_of": np.array([r[0] for r in self._rows], dtype=np.int64),
                "session_of": np.array([r[1] for r in self._rows], dtype=np.int64),
                "traits": np.array([r[2] for r in self._rows], dtype=np.float64).reshape(
                    n, len(FEATURE_GROUPS["memory"])),
                "idf": _idf(self._df[: len(self.vocab)], n),
            }
        return self._arrays

    @property
    def idf(self) -> np.ndarray:
        """(len(vocab),) BM25-style IDF of each term over the namespace."""
        return self._derived()["idf"]

    @property
    def speaker_of(self) -> np.ndarray:
        """(n,) index into ``speaker_terms``, -1 when the memory names no speaker."""
        return self._derived()["speaker_of"]

    @property
    def session_of(self) -> np.ndarray:
        """(n,) session number (order of first sight)."""
        return self._derived()["session_of"]

    @property
    def traits(self) -> np.ndarray:
        """(n, len(FEATURE_GROUPS["memory"])) memory-level features."""
        return self._derived()["traits"]

    def query(self, text: str, vector: np.ndarray) -> QueryTerms:
        """The query's terms against this namespace's vocabulary."""
        tokens = self.tokenizer([text])[0]
        uni, bi = set(tokens), set(_bigrams(tokens))
        known = self.vocab
        unigrams = np.array(sorted(known[t] for t in uni if t in known), dtype=np.int64)
        unseen = len(uni) - len(unigrams)
        top = float(_idf(np.zeros(1), len(self.matrix))[0])
        return QueryTerms(
            vector=np.asarray(vector, dtype=np.float32),
            unigrams=unigrams,
            n_unigrams=len(uni),
            idf_total=float(self.idf[unigrams].sum()) + unseen * top,
            bigrams=np.array(sorted(known[t] for t in bi if t in known), dtype=np.int64),
            n_bigrams=len(bi),
            speakers=np.array([bool(s & uni) for s in self.speaker_terms], dtype=bool),
            flags=query_flags(text, len(uni)),
        )


def query_flags(text: str, n_tokens: int) -> np.ndarray:
    """The query-level features: token count (/16, capped at 1) and the wh-word flags."""
    low = text.lower()
    wh = [bool(_WH[f].search(low)) for f in FEATURE_GROUPS["query"][1:]]
    flags = [min(n_tokens, 16) / 16, *wh]
    return np.array(flags, dtype=np.float64)


@dataclasses.dataclass(frozen=True)
class PoolFeatures:
    """The model's input for one pool: q (d,), m (k, d), x (k, len(FEATURES))."""

    q: np.ndarray
    m: np.ndarray
    x: np.ndarray


def _idf(df: np.ndarray, n: int) -> np.ndarray:
    return np.log1p((n - df + 0.5) / (df + 0.5))


def _row_hits(
    rows_terms: Sequence[np.ndarray],
    rows: np.ndarray,
    terms: np.ndarray,
    weights: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each row: its distinct terms found in ``terms`` (a count, and summed ``weights``),
    and its number of distinct terms. Vectorised over the rows' terms gathered at once."""
    parts = [rows_terms[r] for r in rows.tolist()]
    lens = np.array([len(p) for p in parts], dtype=np.int64)
    total = int(lens.sum())
    if total == 0 or terms.size == 0:
        zero = np.zeros(len(rows))
        return zero, zero, lens.astype(np.float64)
    owner = np.repeat(np.arange(len(rows)), lens)
    found = np.concatenate(parts)
    hits = np.isin(found, terms).astype(np.float64)
    count = np.bincount(owner, weights=hits, minlength=len(rows))
    if weights is None:
        return count, count, lens.astype(np.float64)
    mass = np.bincount(owner, weights=hits * weights[found], minlength=len(rows))
    return count, mass, lens.astype(np.float64)


def window_scores(values: np.ndarray, positions: np.ndarray, n: int, window: int) -> np.ndarray:
    """Best mean of ``values`` over the windows of ``window`` consecutive positions holding each
    candidate; positions without a value count 0. With ``n < window`` the window is all ``n``.

    Example: ``values=[1, .5]`` at positions ``[2, 0]`` of ``n=5``, window 3: the windows are
    [0..2] (mean .5), [1..3] (1/3), [2..4] (1/3), so both candidates get .5.
    """
    w = max(1, min(window, n))
    full = np.zeros(n, dtype=np.float64)
    full[positions] = values
    csum = np.concatenate([[0.0], np.cumsum(full)])
    means = (csum[w:] - csum[:-w]) / w  # means[s] = mean(full[s : s + w])
    last = n - w
    best = np.full(len(positions), -np.inf)
    for offset in range(w):  # w is 3: a loop over window offsets, not over candidates
        start = positions - offset
        ok = (start >= 0) & (start <= last)
        best = np.where(ok, np.maximum(best, means[np.clip(start, 0, last)]), best)
    return best


def _rank01(key: np.ndarray) -> np.ndarray:
    """0-based rank of each item by descending key (ties: input order)."""
    order = np.argsort(-key, kind="stable")
    r = np.empty(len(key), dtype=np.float64)
    r[order] = np.arange(len(key))
    return r


def pool_features(
    query: QueryTerms,
    ns: NamespaceFeatures,
    positions: np.ndarray,
    dense: np.ndarray,
    bm25: np.ndarray,
    fused: np.ndarray,
    *,
    window: int = WINDOW,
) -> PoolFeatures:
    """The v1 features of a pool: ``positions`` are the candidates' rows in ``ns`` (store
    order) and ``dense``/``bm25``/``fused`` their first-stage scores, all aligned; the pool is
    in first-stage order (rank ties are broken by it).

    Vectorised over the pool: the only Python loop runs over the ``window`` offsets.
    """
    positions = np.asarray(positions, dtype=np.int64)
    k, n = len(positions), len(ns.matrix)
    dense = np.asarray(dense, dtype=np.float64)
    bm25 = np.asarray(bm25, dtype=np.float64)
    fused = np.asarray(fused, dtype=np.float64)
    m = ns.matrix[positions]
    if k == 0:
        return PoolFeatures(query.vector, m, np.zeros((0, len(FEATURES)), dtype=np.float32))
    denom = max(k - 1, 1)
    fused01 = minmax(fused)
    rank_fused = _rank01(fused)

    uni_hit, uni_idf, uni_len = _row_hits(ns.uni, positions, query.unigrams, ns.idf)
    bi_hit, _, _ = _row_hits(ns.bi, positions, query.bigrams)
    overlap = uni_hit / max(query.n_unigrams, 1)
    overlap_idf = uni_idf / query.idf_total if query.idf_total > 0 else np.zeros(k)
    union = uni_len + query.n_unigrams - uni_hit
    jaccard = np.divide(uni_hit, union, out=np.zeros(k), where=union > 0)
    bigram = bi_hit / max(query.n_bigrams, 1)
    spk = ns.speaker_of[positions]
    named = np.zeros(k) if query.speakers.size == 0 else query.speakers[np.maximum(spk, 0)]
    speaker = np.where(spk >= 0, named, False).astype(np.float64)

    q = query.vector
    prev_ok, next_ok = positions > 0, positions < n - 1
    dense_prev = np.where(prev_ok, ns.matrix[np.maximum(positions - 1, 0)] @ q, 0.0)
    dense_next = np.where(next_ok, ns.matrix[np.minimum(positions + 1, n - 1)] @ q, 0.0)

    sess = ns.session_of[positions]
    best_in_session = np.zeros(int(sess.max()) + 1)
    np.maximum.at(best_in_session, sess, fused01)
    head = ns.matrix[positions[np.argsort(rank_fused)[:PRF_DEPTH]]].mean(axis=0)
    prf = m @ (head / max(float(np.linalg.norm(head)), 1e-12))

    columns = {
        "dense": dense,
        "dense_pool": minmax(dense),
        "bm25_pool": minmax(bm25),
        "fused_pool": fused01,
        "rank_fused": rank_fused / denom,
        "rank_dense": _rank01(dense) / denom,
        "rank_bm25": _rank01(bm25) / denom,
        "rr_fused": 1.0 / (1.0 + rank_fused),
        "overlap": overlap,
        "overlap_idf": overlap_idf,
        "jaccard": jaccard,
        "bigram_recall": bigram,
        "speaker_in_query": speaker,
        "window": window_scores(fused01, positions, n, window),
        "dense_prev": dense_prev,
        "dense_next": dense_next,
        "session_best": best_in_session[sess],
        "prf": prf,
    }
    columns.update({f: np.full(k, v) for f, v in zip(FEATURE_GROUPS["query"], query.flags,
                                                      strict=True)})
    traits = ns.traits[positions]
    columns.update({f: traits[:, j] for j, f in enumerate(FEATURE_GROUPS["memory"])})
    x = np.stack([columns[f] for f in FEATURES], axis=1).astype(np.float32)
    return PoolFeatures(q, m, x)


__all__ = [
    "FEATURES",
    "FEATURE_GROUPS",
    "NamespaceFeatures",
    "PoolFeatures",
    "QueryTerms",
    "pool_features",
    "window_scores",
]
