"""The validity layer on natural, hand-written updates (``benchmarks/data/natural_updates.jsonl``).

    .venv/bin/python benchmarks/bench_natural.py [--split dev|test|both] [--json OUT]

63 short histories written for this project (not generated): 30 attribute kinds (job, home,
phone, meeting time, a new baby, a switched major, a car replaced, a dose changed, ...), 36 with
a plain update of the target memory (some without cue words, some chains of two updates) and
27 look-alikes that do not overturn it (another person's change, a plan not carried out, a
confirmation, a temporary exception, another attribute of the same object, a reply about the
same event). Each history is split dev / test (stratified by label, in sha256 order of the id)
once, before any result was looked at; thresholds are never set on the test half.

Per history: its turns become one namespace's memories (dated), the question (intent
``current``) runs through the product pipeline (fusion, MiniLM) and the validity stage with the
packaged verifier and thresholds, for the ``top1`` and ``nearest`` source policies. Reported:
flag recall on updated targets (flagged ``possibly_outdated``, and naming the right later
memory), the false-flag rate on look-alike targets, demote's current-first rate on updated
histories (the later memory ranks above the target), the validity stage's share of time, and
(``pairs``) the verifier on each history's own pair with no retrieval in the way.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import datetime
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

from memsieve.embed import MemoEncoder, MiniLMEncoder
from memsieve.eval.datasets import load_task
from memsieve.eval.harness import machine
from memsieve.eval.stats import bootstrap_ci
from memsieve.pipeline import Pipeline
from memsieve.retrieve import Retriever
from memsieve.store import open_store
from memsieve.trace import Trace
from memsieve.types import Memory, Query
from memsieve.validity.edges import rebuild, spoken, verifier_judge
from memsieve.validity.stage import ValidityStage
from memsieve.validity.statement import StatementGate, gate_from_spec
from memsieve.validity.train import binary_metrics
from memsieve.validity.verifier import Verifier

DATA = Path(__file__).resolve().parent / "data" / "natural_updates.jsonl"
# 40 more histories written later (stop 28), before any model or rule was run on them: the
# held-out half once the test half above had been scored by several candidates
FRESH = DATA.with_name("natural_updates_fresh.jsonl")
POLICIES = ("top1", "nearest", "edges")


def load(split: str) -> list[dict]:
    if split == "lme":
        return load_lme()
    path = FRESH if split == "fresh" else DATA
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [r for r in rows if split == "both" or r["split"] == split]


def load_lme() -> list[dict]:
    """Histories from the LongMemEval sample, labelled by question type (see the docstring)."""
    task = load_task("longmemeval")
    by_ns: dict[str, list[Memory]] = {}
    for m in task.memories:
        by_ns.setdefault(m.namespace, []).append(m)
    out = []
    for q in task.queries:
        mems = by_ns[q.namespace]
        when = {m.id: (m.timestamp, m.session_id, m.turn_index) for m in mems}
        gold = sorted(q.gold, key=when.__getitem__)
        sessions = {when[g][1] for g in gold}
        if q.category == "knowledge-update" and len(sessions) >= 2:
            label, later = "superseded", gold[-1]
        elif q.category in ("multi-session", "temporal-reasoning") and len(sessions) >= 2:
            label, later = "current", None
        else:
            continue
        out.append({"id": q.namespace, "kind": q.category, "query": q.text, "intent": "current",
                    "memories": mems, "target": gold[0], "label": label,
                    "superseded_by": later, "later": gold[-1], "split": "lme"})
    return out


def memories(h: dict) -> list[Memory]:
    if "memories" in h:
        return h["memories"]
    return [Memory(id=t["id"], namespace=h["id"], text=t["text"], speaker=t["speaker"],
                   session_id=f"{h['id']}:{t['date']}", turn_index=i,
                   timestamp=datetime.fromisoformat(t["date"]))
            for i, t in enumerate(h["turns"])]


def filled(histories: list[dict], encoder: MemoEncoder, tmp: Path, verifier: Verifier):
    """A store in ``tmp`` holding every history as its own namespace, with the write-time
    edges ``verifier`` judges (as ingest does with the packaged one)."""
    store = open_store(tmp / "n.db")
    for h in histories:
        mems = memories(h)
        store.add(mems, vectors=encoder.encode([m.text for m in mems]), model=encoder.name)
        rebuild(store, h["id"], verifier_judge(verifier))
    return store


def run(histories: list[dict], policy: str, verifier: Verifier, encoder: MemoEncoder,
        gate: StatementGate | None) -> dict:
    out: dict[str, list[float]] = {"flag_recall": [], "flag_names_source": [],
                                   "false_flag": [], "demote_current_first": []}
    with tempfile.TemporaryDirectory() as tmp, filled(histories, encoder, Path(tmp),
                                                       verifier) as store:
        retriever = Retriever(store, encoder, method="fusion")
        th = verifier.stage_thresholds(encoder.name)
        stages = {mode: ValidityStage([verifier], mode=mode, store=store, top_k=10,
                                      cache=retriever.cache, source_policy=policy,
                                      target_gate=gate, **th)
                  for mode in ("context", "demote")}
        for h in histories:
            query = Query(text=h["query"], namespace=h["id"], intent=h["intent"])
            base = Pipeline([retriever], store=store).candidates(query)
            with store.snapshot():
                flagged = stages["context"](query, base, trace=Trace())
                demoted = stages["demote"](query, base, trace=Trace())
            v = {c.memory.id: c.annotations.get("validity") for c in flagged}
            target = v.get(h["target"])
            is_flagged = target is not None and target.status == "possibly_outdated"
            if h["label"] == "superseded":
                out["flag_recall"].append(float(is_flagged))
                out["flag_names_source"].append(
                    float(is_flagged and target.superseded_by == h["superseded_by"]))
                order = [c.memory.id for c in demoted]
                out["demote_current_first"].append(
                    float(order.index(h["superseded_by"]) < order.index(h["target"])))
            else:
                out["false_flag"].append(float(is_flagged))
    return {k: {"mean": float(np.mean(v)), "ci95": list(bootstrap_ci(np.array(v))), "n": len(v)}
            for k, v in out.items() if v}


def pair_scores(histories: list[dict], verifier: Verifier, threshold: float) -> dict:
    """The verifier on each history's own pair, no retrieval and no stage: the update (or the
    look-alike's later turn: the last turn, or LongMemEval's latest evidence turn) as source,
    the target as target. AUC over histories, and recall / specificity at ``threshold`` (the
    context threshold): how well the pair is judged, apart from what reaches the stage."""
    triples, updated = [], []
    for h in histories:
        mems = memories(h)
        text = {m.id: spoken(m) for m in mems}  # as the stage reads them
        source = h["superseded_by"] or h.get("later") or mems[-1].id
        triples.append((h["query"], text[source], text[h["target"]]))
        updated.append(h["label"] == "superseded")
    scores, y = verifier.score(triples), np.array(updated)
    at = binary_metrics(scores, y, threshold)
    return {"auc": float(roc_auc_score(y, scores)), "recall": at["recall"],
            "specificity": at["specificity"], "n": [int(y.sum()), int((~y).sum())]}


def timing(histories: list[dict], verifier: Verifier, encoder: MemoEncoder,
           policy: str, gate: StatementGate | None) -> dict:
    """p50 ms of the query without the validity stage (query encoding included) and of the
    stage (context, the given source policy)."""
    rest, stage_ms = [], []
    with tempfile.TemporaryDirectory() as tmp, filled(histories, encoder, Path(tmp),
                                                       verifier) as store:
        retriever = Retriever(store, encoder.inner, method="fusion")  # encodes every query
        stage = ValidityStage([verifier], mode="context", store=store, top_k=10,
                              cache=retriever.cache, source_policy=policy, target_gate=gate,
                              **verifier.stage_thresholds(encoder.name))
        for h in histories * 2:
            query = Query(text=h["query"], namespace=h["id"], intent="current")
            t0 = time.perf_counter()
            base = Pipeline([retriever], store=store).candidates(query)
            t1 = time.perf_counter()
            with store.snapshot():
                stage(query, base, trace=Trace())
            t2 = time.perf_counter()
            rest.append((t1 - t0) * 1000)
            stage_ms.append((t2 - t1) * 1000)
    return {"rest_p50_ms": float(np.median(rest)), "validity_p50_ms": float(np.median(stage_ms)),
            "ratio": float(np.median(stage_ms) / np.median(rest))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=["dev", "test", "both", "fresh", "all", "lme"],
                    default="dev", help="dev / test halves of the first set, both, the fresh "
                    "set, all three, or the LongMemEval sample's updates and look-alikes")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--checkpoint", type=Path, help="verifier (default: the packaged one)")
    ap.add_argument("--no-timing", action="store_true", help="skip the latency part")
    ap.add_argument("--target-gate", default="packaged",
                    help="statement gate on targets: 'packaged', 'off' or a checkpoint path")
    args = ap.parse_args()
    verifier = Verifier.load(args.checkpoint)
    gate = gate_from_spec(args.target_gate)
    encoder = MemoEncoder(MiniLMEncoder())
    splits = {"both": ["dev", "test"], "all": ["dev", "test", "fresh"]}.get(args.split,
                                                                          [args.split])
    data = "longmemeval sample" if args.split == "lme" else DATA.name
    result: dict = {"data": data, "machine": machine(), "splits": {},
                    "checkpoint": args.checkpoint.name if args.checkpoint else "packaged",
                    "target_gate": Path(args.target_gate).name}
    for split in splits:
        histories = load(split)
        result["splits"][split] = {p: run(histories, p, verifier, encoder, gate)
                                   for p in POLICIES}
        for policy, s in result["splits"][split].items():
            print(f"{split} {policy}: " + "  ".join(
                f"{k} {v['mean']:.2f} [{v['ci95'][0]:.2f}, {v['ci95'][1]:.2f}] (n={v['n']})"
                for k, v in s.items()))
        threshold = verifier.stage_thresholds(encoder.name)["context_threshold"]
        pairs = result["splits"][split]["pairs"] = pair_scores(histories, verifier, threshold)
        print(f"{split} pairs: AUC {pairs['auc']:.3f}  recall {pairs['recall']:.2f}  "
              f"specificity {pairs['specificity']:.2f} (n={pairs['n']})")
    if not args.no_timing:
        result["timing"] = {p: timing(load("dev"), verifier, encoder, p, gate)
                            for p in ("top1", "edges")}
        print(f"timing (dev): {result['timing']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
