"""Validity layer benchmarks (measure and print; never tuned on what they report).

    .venv/bin/python benchmarks/bench_validity.py [--memora ../shared/data/memora/weekly]
        [--locomo ../shared/data/locomo/locomo10.json] [--json OUT]

1. Memora current state (PROTOCOL.md): fusion first stage, then the validity stage in off /
   context / demote; current-evidence H@1 and R@5, stale exposure@5, demote and protect recall,
   with bootstrap CIs over queries.
2. LoCoMo: context mode leaves every ranking identical to off; the flag rate in the top 10.
3. Synthetic multi-hop chains (``make_chains``, fixed seeds, lengths 2-4, valid controls):
   per-chain accuracy (share of chain memories labelled right) for recency, single-hop
   scoring, propagation of the verifier's scores over the given structure, and the oracle
   (true update node propagated over the true structure: the ceiling, exact by construction);
   overall / invalidated-only / valid-control, by length.
4. Latency: ms per scored pair (batched) and per query for a top-10 annotation.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from memsieve.embed import MemoEncoder, MiniLMEncoder
from memsieve.eval.harness import cached_vectors
from memsieve.eval.memora import load_memora_current
from memsieve.eval.stats import bootstrap_ci
from memsieve.pipeline import Pipeline
from memsieve.retrieve import Retriever
from memsieve.store import open_store
from memsieve.types import Query
from memsieve.validity.edges import rebuild, verifier_judge
from memsieve.validity.stage import ValidityStage
from memsieve.validity.statement import gate_from_spec

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
MODES = ("off", "context", "demote")


def build(memories, encoder, tmp: Path, name: str, verifier):
    """A store of ``memories`` with the write-time edges as ingest makes them, judged by the
    verifier under test (so a candidate checkpoint is scored with its own edges)."""
    store = open_store(tmp / f"{name}.db")
    store.add(memories, vectors=cached_vectors(encoder.inner, [m.text for m in memories],
                                               progress=True), model=encoder.name)
    judge = verifier_judge(verifier)
    for ns in store.namespaces():
        rebuild(store, ns, judge)
    return store


def _summary(rows: dict[str, list[float]]) -> dict:
    return {k: {"mean": float(np.mean(v)) if v else None,
                "ci95": list(bootstrap_ci(np.array(v))) if v else None, "n": len(v)}
            for k, v in rows.items()}


def memora_current(verifier, encoder, tmp: Path, period: Path, policy: str, th: dict) -> dict:
    """PROTOCOL.md "Memora current state": per mode, over all personas and per persona half
    (``dev``: the first five by name, used for the generator's error analysis; ``held_out``:
    the other five); plus pair accuracy with the true source."""
    memories, queries = load_memora_current(period)
    by_id = {m.id: m for m in memories}
    texts = list(dict.fromkeys(q.text for q in queries))
    encoder.remember(texts, cached_vectors(encoder.inner, texts, progress=False))
    store = build(memories, encoder, tmp, "memora", verifier)
    retriever = Retriever(store, encoder)
    dev = set(sorted({q.namespace for q in queries})[:5])
    halves = {"all": lambda q: True, "dev": lambda q: q.namespace in dev,
              "held_out": lambda q: q.namespace not in dev}
    out: dict = {"queries": len(queries), "memories": len(memories), "source_policy": policy,
                 "dev_personas": sorted(dev), "modes": {}}
    for mode in MODES:
        stage = ValidityStage([verifier], mode=mode, store=store, cache=retriever.cache,
                              source_policy=policy, **th)
        pipe = Pipeline([retriever, stage], k=10)
        per_query = []
        for q in queries:
            res = pipe.run(Query(text=q.text, namespace=q.namespace)).results
            ids = [r.memory_id for r in res]
            flag = [r.annotations.get("validity") is not None
                    and r.annotations["validity"].status == "possibly_outdated" for r in res]
            row = {"current_H@1": float(bool(ids) and ids[0] in q.current),
                   "current_R@5": len(q.current & set(ids[:5])) / min(5, len(q.current)),
                   "stale_exposure@5": float(sum(i in q.stale and not f
                                                 for i, f in zip(ids[:5], flag[:5], strict=True)))}
            stale = [f for i, f in zip(ids, flag, strict=True) if i in q.stale]
            keep = [not f for i, f in zip(ids, flag, strict=True) if i in q.current | q.update]
            if stale:
                row["demote_recall"] = float(np.mean(stale))
            if keep:
                row["protect_recall"] = float(np.mean(keep))
            per_query.append((q, row))
        out["modes"][mode] = {}
        for half, keep_q in halves.items():
            rows: dict[str, list[float]] = {k: [] for k in (
                "current_H@1", "current_R@5", "stale_exposure@5", "demote_recall",
                "protect_recall")}
            for q, row in per_query:
                if keep_q(q):
                    for k, v in row.items():
                        rows[k].append(v)
            out["modes"][mode][half] = _summary(rows)
    out["pair_accuracy_true_source"] = memora_pairs(verifier, queries, by_id, halves,
                                                    th["context_threshold"])
    out["edge_coverage"] = edge_coverage(store, queries, halves, th.get("edge_threshold"))
    store.close()
    return out


def edge_coverage(store, queries, halves, t: float | None) -> dict:
    """How many true (update, stale turn) pairs the write-time edges link at all, and with a
    query-blind score the stage judges (``>= edge_threshold``): the ceiling of the ``edges``
    source policy, whatever the query-time judgement."""
    out = {"edge_threshold": t}
    for half, keep_q in halves.items():
        pairs = {(q.namespace, old, upd) for q in queries if keep_q(q) for old, upd in q.pairs}
        linked = judged = 0
        for ns, old, upd in pairs:
            score = {e.source: e.score for e in store.edges(ns, [old]).get(old, [])}.get(upd)
            linked += score is not None
            judged += score is not None and (t is None or score >= t)
        n = max(len(pairs), 1)
        out[half] = {"pairs": len(pairs), "linked": linked / n, "judged": judged / n}
    return out


def memora_pairs(verifier, queries, by_id, halves, t: float) -> dict:
    """The relation judgment alone: (question, true update turn, the turn it overturns) should
    be flagged; the same update against the question's other earlier evidence turns (current
    ones, and stale ones another update overturns) should not."""
    from sklearn.metrics import roc_auc_score

    from memsieve.validity.stage import is_later

    triples, labels, owner = [], [], []
    for q in queries:
        partner = {}
        for old, upd in q.pairs:
            partner.setdefault(upd, set()).add(old)
        for upd, olds in partner.items():
            u = by_id[upd]
            for tid in sorted(q.current | q.stale):
                if tid in olds or is_later(by_id[tid], u) or tid == upd:
                    continue
                triples.append((q.text, u.text, by_id[tid].text))
                labels.append(0)
                owner.append(q)
            for old in sorted(olds):
                triples.append((q.text, u.text, by_id[old].text))
                labels.append(1)
                owner.append(q)
    scores = verifier.score(triples)
    labels_a = np.array(labels)
    pred = scores >= t
    out = {"threshold": t}
    for half, keep_q in halves.items():
        m = np.array([keep_q(q) for q in owner])
        pos, neg = m & (labels_a == 1), m & (labels_a == 0)
        out[half] = {"positives": int(pos.sum()), "negatives": int(neg.sum()),
                     "positive_recall": float(pred[pos].mean()) if pos.any() else None,
                     "negative_specificity": float((~pred[neg]).mean()) if neg.any() else None,
                     "accuracy": float((pred[m] == labels_a[m].astype(bool)).mean()),
                     # threshold-free: how well the scores rank true overturns above the rest
                     "auc": float(roc_auc_score(labels_a[m], scores[m]))
                     if pos.any() and neg.any() else None}
    return out


class CountingScorer:
    """A PairScorer that counts the pairs it passes on to the verifier."""

    def __init__(self, inner) -> None:
        self.inner, self.pairs = inner, 0

    def score(self, triples):
        self.pairs += len(triples)
        return self.inner.score(triples)


def locomo_context(verifier, encoder, tmp: Path, path: Path, limit: int, policy: str,
                   th: dict, offset: int = 0, dump: Path | None = None) -> dict:
    """Context mode must leave every ranking identical to off; how often does it flag?
    ``dump``: also write each flag (query, target, source, score) as JSON lines, to read."""
    from memsieve.eval.datasets import load_locomo

    task = load_locomo(path)
    queries = task.queries[offset:offset + limit] if limit else task.queries[offset:]
    texts = list(dict.fromkeys(q.text for q in queries))
    encoder.remember(texts, cached_vectors(encoder.inner, texts, progress=False))
    store = build(task.memories, encoder, tmp, "locomo", verifier)
    retriever = Retriever(store, encoder)
    off = Pipeline([retriever], k=10)
    counter = CountingScorer(verifier)
    ctx = Pipeline([retriever, ValidityStage([counter], store=store, cache=retriever.cache,
                                             source_policy=policy, **th)],
                   k=10)
    identical, flagged, total, ms, flags_read = 0, 0, 0, [], []
    for q in queries:
        query = Query(text=q.text, namespace=q.namespace)
        a = off.run(query)
        b = ctx.run(query)
        ms.append(b.trace.timings_ms.get("validity", 0.0))
        identical += [r.memory_id for r in a.results] == [r.memory_id for r in b.results]
        flags = [r.annotations["validity"].status == "possibly_outdated" for r in b.results]
        flags_read += [{"query": q.text, "target": store.get(q.namespace, r.memory_id).text,
                        "source": r.annotations["validity"].evidence,
                        "score": r.annotations["validity"].invalid_score}
                       for r, f in zip(b.results, flags, strict=True) if f]
        flagged += sum(flags)
        total += len(flags)
    store.close()
    if dump is not None:
        dump.write_text("".join(json.dumps(f) + "\n" for f in flags_read), encoding="utf-8")
    return {"queries": len(queries), "offset": offset, "rankings_identical": identical,
            "flag_rate_top10": flagged / max(total, 1),
            "pairs_scored_per_query": counter.pairs / max(len(queries), 1),
            "validity_ms_per_query": {"p50": float(np.median(ms)),
                                      "p95": float(np.percentile(ms, 95))}}


def multihop(verifier, seeds: list[int], n_chains: int, t: float) -> dict:
    """Synthetic multi-hop validity (validity-context-layer §10): each chain memory is judged
    with its own question against the later update; propagation uses ``compose.propagate``,
    the function the stage uses for caller-given dependency edges."""
    from memsieve.validity.chains import make_chains
    from memsieve.validity.compose import propagate

    methods = ("recency", "single_hop", "propagation", "oracle")
    per_chain: list[dict] = []
    for seed in seeds:
        chains = make_chains(n_chains, seed)
        triples = [(c.queries[m.id], c.update.text, m.text) for c in chains for m in c.memories]
        scores = iter(verifier.score(triples))
        for c in chains:
            direct = {m.id: float(next(scores)) for m in c.memories}
            truth = {m.id: m.id in c.gold_invalid for m in c.memories}
            prop = propagate(direct, c.parents)
            oracle = propagate({m: float(m in c.direct_invalid) for m in direct}, c.parents)
            pred = {
                "recency": {m: True for m in direct},  # every memory older than an update
                "single_hop": {m: direct[m] >= t for m in direct},
                "propagation": {m: prop[m] >= t for m in direct},
                "oracle": {m: oracle[m] >= 0.5 for m in direct},
            }
            per_chain.append({
                "seed": seed, "length": c.length, "invalidated": bool(c.gold_invalid),
                **{k: float(np.mean([pred[k][m] == truth[m] for m in direct])) for k in methods},
            })
    out: dict = {"seeds": seeds, "chains_per_seed": n_chains, "threshold": t, "splits": {}}
    for split, keep in (("all", lambda r: True), ("invalidated", lambda r: r["invalidated"]),
                        ("valid_control", lambda r: not r["invalidated"])):
        rows = [r for r in per_chain if keep(r)]
        block = {}
        for length in ("all", 2, 3, 4):
            sub = [r for r in rows if length == "all" or r["length"] == length]
            block[str(length)] = {"n": len(sub), **{
                k: {"mean": float(np.mean([r[k] for r in sub])),
                    "seed_std": float(np.std([np.mean([r[k] for r in sub if r["seed"] == s])
                                              for s in seeds])),
                    "ci95": list(bootstrap_ci(np.array([r[k] for r in sub])))}
                for k in methods}}
        out["splits"][split] = block
    return out


def pair_latency(verifier) -> dict:
    """ms per (query, source, target) pair when scored in batches of 10 and 32."""
    triple = ("Where does Sam work now?", "Sam: I quit the hospital, I teach at Greenfield now.",
              "Sam: I started as a nurse at St. Mary's Hospital.")
    out = {}
    for batch in (1, 10, 32):
        verifier.score([triple] * batch)
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            verifier.score([triple] * batch)
            times.append((time.perf_counter() - t0) * 1000.0 / batch)
        out[f"batch_{batch}"] = round(float(np.median(times)), 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memora", type=Path, default=SHARED / "memora" / "weekly")
    ap.add_argument("--locomo", type=Path, default=SHARED / "locomo" / "locomo10.json")
    ap.add_argument("--locomo-queries", type=int, default=0, help="0 = all")
    ap.add_argument("--locomo-offset", type=int, default=0, help="skip this many queries")
    ap.add_argument("--chains", type=int, default=300, help="multi-hop chains per seed")
    ap.add_argument("--chain-seeds", default="101,202,303,404,505")
    ap.add_argument("--only", choices=("memora", "multihop", "latency", "locomo"),
                    action="append", help="run only these parts (repeatable)")
    ap.add_argument("--source-policy", default="top1", choices=("top1", "nearest", "edges"),
                    help="the validity stage's source policy for Memora and LoCoMo")
    ap.add_argument("--checkpoint", type=Path, help="verifier (default: the packaged one)")
    ap.add_argument("--no-gate", action="store_true", help="ignore the similarity floor")
    ap.add_argument("--target-gate", default="packaged",
                    help="statement gate on targets: 'packaged', 'off' or a checkpoint path")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    ap.add_argument("--dump-flags", type=Path, help="LoCoMo: write each flag as a JSON line")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    parts = set(args.only or ("memora", "multihop", "latency", "locomo"))
    from memsieve.validity.verifier import Verifier

    t0 = time.perf_counter()
    verifier = Verifier.load(args.checkpoint, threads=args.threads)
    load_s = time.perf_counter() - t0
    th = verifier.stage_thresholds("minilm")  # the stage keywords, with the minilm floor
    if args.no_gate:
        th.pop("min_similarity", None)
    gate = gate_from_spec(args.target_gate)
    opts = {**th, "target_gate": gate}  # the stage keywords
    encoder = MemoEncoder(MiniLMEncoder(), capacity=100_000)
    out = {"machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                       "torch_threads": args.threads},
           "verifier_load_s": round(load_s, 2), "thresholds": th,
           "target_gate": args.target_gate if gate is None else
           {"checkpoint": Path(args.target_gate).name, "threshold": gate.threshold}}
    with tempfile.TemporaryDirectory() as tmp:
        if "memora" in parts:
            out["memora_current"] = memora_current(verifier, encoder, Path(tmp), args.memora,
                                                   args.source_policy, opts)
            print(json.dumps(out["memora_current"], indent=1), flush=True)
        if "multihop" in parts:
            seeds = [int(x) for x in args.chain_seeds.split(",")]
            out["multihop"] = multihop(verifier, seeds, args.chains, th["context_threshold"])
            print(json.dumps(out["multihop"]["splits"]), flush=True)
        if "latency" in parts:
            out["pair_latency_ms"] = pair_latency(verifier)
            print(json.dumps(out["pair_latency_ms"]), flush=True)
        if "locomo" in parts:
            out["locomo_context"] = locomo_context(verifier, encoder, Path(tmp), args.locomo,
                                                   args.locomo_queries, args.source_policy,
                                                   opts, args.locomo_offset, args.dump_flags)
            print(json.dumps(out["locomo_context"]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
