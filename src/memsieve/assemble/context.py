"""Stage 7, context assembly: what goes into the prompt, under a token budget (JustMem's two
dimensions: discovery breadth and reading fidelity).

Modes, over the pipeline's ranked candidates (after validity and admissibility):

- ``lookup``: each turn's best atomic unit (local evidence, compact: more turns fit);
- ``compose``: units as lookup, in rank order interleaved with the best turn of each session
  not yet in the context (breadth across sessions, for evidence spread over several);
- ``replay``: the original turns with their neighbours in the session (fidelity);
- ``topk``: plain top-k whole turns (the baseline the others are measured against);
- ``auto``: one of lookup / compose / replay chosen per query by a rule over query features
  (``AutoRule``), fitted on train halves only.

Every assembled context can be recorded as an exposure (ids and reasons, never text).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import re
from collections.abc import Sequence
from importlib import resources
from typing import Any

from memsieve.admissibility import AdmissibilityStage
from memsieve.assemble.units import count_tokens
from memsieve.errors import ConfigError
from memsieve.pipeline import Pipeline
from memsieve.store.base import Exposure
from memsieve.telemetry import memory_span
from memsieve.trace import Trace
from memsieve.types import Candidate, Memory, Query


class AccessMode(enum.StrEnum):
    auto = "auto"
    lookup = "lookup"
    compose = "compose"
    replay = "replay"
    topk = "topk"


SINGLE_MODES = (AccessMode.lookup, AccessMode.compose, AccessMode.replay)
DEFAULT_BUDGET = 600


@dataclasses.dataclass(frozen=True)
class ContextItem:
    """One piece of the prompt: a unit or a whole turn, and the memory it comes from."""

    memory_id: str
    text: str
    role: str  # unit | turn | neighbour
    validity: Any = None
    admissibility: Any = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"memory_id": self.memory_id, "text": self.text, "role": self.role}
        for name in ("validity", "admissibility"):
            value = getattr(self, name)
            if value is not None:
                d[name] = dataclasses.asdict(value)
        return d


@dataclasses.dataclass(frozen=True)
class Context:
    """An assembled context: its items in prompt order, what was kept out, and the text."""

    query: str
    mode: str
    budget: int
    tokens: int
    memories: list[ContextItem]
    excluded: list[tuple[str, str]]
    text: str
    exposure_id: int | None = None

    @property
    def memory_ids(self) -> list[str]:
        """Distinct memory ids in prompt order (what the exposure log records)."""
        return list(dict.fromkeys(i.memory_id for i in self.memories))

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query, "mode": self.mode, "budget": self.budget,
            "tokens": self.tokens, "memories": [m.to_dict() for m in self.memories],
            "excluded": [{"memory_id": m, "reason": r} for m, r in self.excluded],
            "text": self.text, "exposure_id": self.exposure_id,
        }


# -- auto: a rule over query features, fitted on train halves ---------------------------------

_TEMPORAL = re.compile(r"\b(when|what (year|month|day|date|time)|how long|before|after|since)\b")
_AGGREGATE = re.compile(r"\b(how many|what (are|were|kinds?|types?)|which|all|both|list|"
                        r"what .*(things|activities|books|events|places|ways))\b")
_WHY = re.compile(r"^\s*(why|how (did|does|do|is|was|would|could))\b")
_YESNO = re.compile(r"^\s*(is|are|was|were|did|does|do|would|could|can|has|have|will)\b")


def query_features(text: str, candidates: Sequence[Candidate], top: int = 10) -> str:
    """A coarse bucket of the query: its question kind and how many sessions its top
    candidates come from (spread suggests distributed evidence)."""
    t = text.lower()
    kind = ("temporal" if _TEMPORAL.search(t) else "aggregate" if _AGGREGATE.search(t)
            else "why" if _WHY.search(t) else "yesno" if _YESNO.search(t) else "fact")
    sessions = {c.memory.session_id or c.memory.id for c in candidates[:top]}
    spread = "narrow" if len(sessions) <= 3 else "mid" if len(sessions) <= 6 else "wide"
    return f"{kind}|{spread}"


@dataclasses.dataclass(frozen=True)
class AutoRule:
    """Budget → (feature bucket → mode), with a default mode per budget."""

    table: dict[str, dict[str, Any]]
    fitted_on: str = ""

    def choose(self, bucket: str, budget: int) -> AccessMode:
        if not self.table:
            return AccessMode.lookup
        key = min(self.table, key=lambda b: (abs(math.log(int(b) / max(budget, 1))), int(b)))
        entry = self.table[key]
        return AccessMode(entry["buckets"].get(bucket, entry["default"]))

    @classmethod
    def fit(cls, rows: Sequence[tuple[str, int, dict[str, float]]], *, min_support: int = 30,
            margin: float = 0.01, fitted_on: str = "") -> AutoRule:
        """From (bucket, budget, {mode: evidence recall}) rows of train queries: per budget,
        the mode with the best mean recall overall (default); a bucket of at least
        ``min_support`` queries gets its own mode only when that beats the default on it by
        ``margin`` (small buckets and small gains are noise more often than signal)."""
        table: dict[str, dict[str, Any]] = {}
        for budget in sorted({b for _, b, _ in rows}):
            at = [(k, r) for k, b, r in rows if b == budget]
            default = _best([r for _, r in at])
            buckets = {}
            for bucket in sorted({k for k, _ in at}):
                these = [r for k, r in at if k == bucket]
                if len(these) < min_support:
                    continue
                best = _best(these)
                gain = sum(r[best] - r[default] for r in these) / len(these)
                if best != default and gain >= margin:
                    buckets[bucket] = best
            table[str(budget)] = {"default": default, "buckets": buckets}
        return cls(table, fitted_on)

    def to_json(self) -> str:
        return json.dumps({"fitted_on": self.fitted_on, "table": self.table}, indent=1,
                          sort_keys=True)

    @classmethod
    def load(cls, text: str | None = None) -> AutoRule:
        """The packaged rule (or one from ``text``)."""
        if text is None:
            text = resources.files("memsieve.assemble").joinpath("auto-rule.json").read_text()
        data = json.loads(text)
        return cls(data["table"], data.get("fitted_on", ""))


def _best(recalls: Sequence[dict[str, float]]) -> str:
    """The single mode with the best mean; ties go to the first of lookup, compose, replay."""
    means = {m.value: sum(r[m.value] for r in recalls) / len(recalls) for m in SINGLE_MODES}
    return max(SINGLE_MODES, key=lambda m: (means[m.value], -SINGLE_MODES.index(m))).value


# -- assembly -------------------------------------------------------------------------------


class Assembler:
    """Builds contexts from a pipeline's candidates over the pipeline's store.

    ``depth``: how many ranked candidates a context may draw from; ``window``: replay's
    neighbours on each side; ``rule``: the auto rule (the packaged one by default).
    """

    name = "assemble"

    def __init__(self, pipeline: Pipeline, *, depth: int = 50, window: int = 1,
                 rule: AutoRule | None = None) -> None:
        if pipeline.store is None:
            raise ConfigError("context assembly needs a pipeline over a store")
        self.pipeline, self.store = pipeline, pipeline.store
        self.depth, self.window = depth, window
        self.gate = next((s for s in pipeline.stages if isinstance(s, AdmissibilityStage)),
                         None)
        from memsieve.retrieve.retriever import Retriever

        # the retriever's live index already holds the query terms' postings for this snapshot
        self.cache = next((s.cache for s in pipeline.stages if isinstance(s, Retriever)), None)
        self.rule = rule if rule is not None else AutoRule.load()
        from memsieve.retrieve.bm25 import Analyzer

        self.analyzer = Analyzer()

    def __call__(self, query: Query, *, mode: AccessMode | str = AccessMode.auto,
                 budget: int = DEFAULT_BUDGET, record: bool = True) -> Context:
        """Retrieve, judge and assemble a context for ``query``; record the exposure."""
        mode, budget = _mode(mode), _budget(budget)
        trace = Trace()
        with memory_span(query.namespace, "context") as span:
            with self.store.snapshot():
                candidates = self.pipeline.candidates(query, trace=trace)
                with trace.timed("assemble"):
                    context = self.assemble(query, candidates, mode=mode, budget=budget,
                                            excluded=list(trace.excluded.items()))
            if record:
                context = self.record(query, context)
            span.records(context.memory_ids)
            span.set("memsieve.context.mode", context.mode)
        return context

    def record(self, query: Query, context: Context) -> Context:
        """Append the context's exposure to the store's audit log."""
        exposure = self.store.record_exposure(Exposure(
            namespace=query.namespace, query=query.text, mode=context.mode,
            memory_ids=context.memory_ids, excluded=list(context.excluded),
            detail={"budget": context.budget, "tokens": context.tokens,
                    "intent": query.intent.value},
        ))
        return dataclasses.replace(context, exposure_id=exposure.id)

    def assemble(self, query: Query, candidates: Sequence[Candidate], *,
                 mode: AccessMode | str, budget: int,
                 excluded: Sequence[tuple[str, str]] = ()) -> Context:
        """The context of already ranked ``candidates`` (no retrieval, nothing recorded)."""
        mode, budget = _mode(mode), _budget(budget)
        top = list(candidates[: self.depth])
        chosen = mode
        if mode is AccessMode.auto:
            chosen = self.rule.choose(query_features(query.text, top), budget)
        kept_out = dict(excluded)
        blocks = self._blocks(query, top, chosen, kept_out)
        header = "Memories (most relevant first):"
        used, lines, items = count_tokens(header), [header], []
        for block_items, block_lines in blocks:
            cost = sum(count_tokens(line) for line in block_lines)
            if used + cost > budget:
                continue  # a smaller block further down may still fit
            used += cost
            lines += block_lines
            items += block_items
        label = chosen.value if mode is not AccessMode.auto else f"auto:{chosen.value}"
        text = "\n".join(lines) if items else ""
        return Context(query.text, label, budget, used if items else 0, items,
                       list(kept_out.items()), text)

    # -- the modes ------------------------------------------------------------------------

    def _blocks(self, query: Query, top: list[Candidate], mode: AccessMode,
                kept_out: dict[str, str]) -> list[tuple[list[ContextItem], list[str]]]:
        if mode is AccessMode.replay:
            return self._replay(query, top, kept_out)
        if mode is AccessMode.topk:
            return [self._block([(c, c.memory, c.memory.text, "turn")]) for c in top]
        order = top if mode is AccessMode.lookup else _by_session(top)
        units = self._best_units(query, order)
        return [self._block([(c, c.memory, units[c.memory.id][0], units[c.memory.id][1])])
                for c in order]

    def _replay(self, query: Query, top: list[Candidate], kept_out: dict[str, str]):
        """Each hit with its session neighbours. A neighbour is no ranked result, so it passes
        the pipeline's admissibility stage here: under enforce an inadmissible one stays out
        (and is listed as excluded), as any result would."""
        around = self.store.neighbours(query.namespace, [c.memory.id for c in top], self.window)
        seen: set[str] = set(kept_out)
        blocks = []
        for c in top:
            if c.memory.id in seen:
                continue
            parts = []
            for m in around.get(c.memory.id, [c.memory]):
                if m.id in seen:
                    continue
                seen.add(m.id)
                if m.id == c.memory.id:
                    parts.append((c, m, m.text, "turn"))
                    continue
                judged = self._judge(query, m, kept_out)
                if judged is not None:
                    parts.append((judged, m, m.text, "neighbour"))
            blocks.append(self._block(parts))
        return blocks

    def _judge(self, query: Query, memory: Memory,
               kept_out: dict[str, str]) -> Candidate | None:
        """A memory outside the ranking through the pipeline's admissibility stage (None: kept
        out, with its reason added to ``kept_out``)."""
        candidate = Candidate(memory, 0.0)
        if self.gate is None:
            return candidate
        trace = Trace()
        judged = self.gate(query, [candidate], trace=trace)
        kept_out.update(trace.excluded)
        return judged[0] if judged else None

    def _best_units(self, query: Query, order: list[Candidate]) -> dict[str, tuple[str, str]]:
        """Each memory's most query-like unit (IDF-weighted term overlap) and its role; the
        whole turn when no unit shares a term with the query (a dense-only match)."""
        units = self.store.units(query.namespace, [c.memory.id for c in order])
        terms = set(self.analyzer([query.text])[0])
        stats = (self.cache.get(query.namespace).term_stats(self.store, sorted(terms))
                 if self.cache is not None else self.store.postings(query.namespace,
                                                                    sorted(terms)))
        n = max(stats.n_docs, 1)
        idf = {t: math.log(1 + (n - len(p.seqs) + 0.5) / (len(p.seqs) + 0.5))
               for t, p in stats.postings.items() if len(p.seqs)}
        out = {}
        for c in order:
            pieces = units.get(c.memory.id) or [c.memory.text]
            if len(pieces) == 1:
                out[c.memory.id] = (c.memory.text, "turn")
                continue
            scores = [sum(idf.get(t, 0.0) for t in set(toks) & terms)
                      for toks in self.analyzer(pieces)]
            best = max(range(len(pieces)), key=lambda i: (scores[i], -i))
            out[c.memory.id] = ((pieces[best], "unit") if scores[best] > 0
                                else (c.memory.text, "turn"))
        return out

    @staticmethod
    def _block(parts: list[tuple[Candidate | None, Memory, str, str]]):
        items, lines = [], []
        for c, m, text, role in parts:
            validity = c.annotations.get("validity") if c is not None else None
            adm = c.annotations.get("admissibility") if c is not None else None
            items.append(ContextItem(m.id, text, role, validity, adm))
            when = m.timestamp.date().isoformat() + " " if m.timestamp else ""
            said = m.speaker and not text.startswith(f"{m.speaker}:")
            who = f"{m.speaker}: " if said else ""
            mark = "  ~ " if role == "neighbour" else ""
            lines.append(f"{mark}[{m.id}] {when}{who}{_one_line(text)}")
            if validity is not None and validity.status == "possibly_outdated":
                lines.append(f"    note: {validity.context_note} (see [{validity.superseded_by}])")
            if adm is not None and adm.status == "unresolved":
                lines.append(f"    note: use with care, admissibility unresolved ({adm.reason})")
            elif adm is not None and adm.status == "inadmissible":  # annotate mode only
                lines.append(f"    note: not admissible here ({adm.reason})")
        return items, lines


def _by_session(top: list[Candidate]) -> list[Candidate]:
    """Rank order interleaved with breadth: after each next-best candidate, the best one from a
    session not yet in the context (so evidence spread over sessions gets in early, without
    pushing the strongest hits out)."""
    def session(i: int) -> str:
        return top[i].memory.session_id or top[i].memory.id

    out: list[Candidate] = []
    taken: set[int] = set()
    sessions: set[str] = set()
    rank = 0
    while len(out) < len(top):
        while rank in taken:
            rank += 1
        taken.add(rank)
        sessions.add(session(rank))
        out.append(top[rank])
        novel = next((j for j in range(len(top))
                      if j not in taken and session(j) not in sessions), None)
        if novel is not None:
            taken.add(novel)
            sessions.add(session(novel))
            out.append(top[novel])
    return out


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _mode(mode: AccessMode | str) -> AccessMode:
    try:
        return AccessMode(mode)
    except ValueError:
        names = ", ".join(m.value for m in AccessMode)
        raise ConfigError(f"mode must be one of {names}, got {mode!r}") from None


def _budget(budget: object) -> int:
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ConfigError(f"budget must be a positive number of tokens, got {budget!r}")
    return budget
