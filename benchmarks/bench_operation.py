"""A query-blind operation head, trained on generated single utterances only, against the
packaged verifier (issue 13, item 1; measured, not in the pipeline).

    .venv/bin/python benchmarks/bench_operation.py [--json OUT]

The head: logistic regression (scikit-learn, installed with sentence-transformers) on the
packaged MiniLM embedding of one utterance, trained on 16,000 utterances of
``operation_utterances.generate`` (the file beside this one): "does the speaker assert a
durable change of their own state?". It sees no query and no target, so it could score a
memory once, when it is written. Reported:

- natural updates (``benchmarks/data/natural_updates.jsonl``): per history, the highest score
  over the target's later turns; AUC (updates vs look-alikes) of the head and of the packaged
  verifier (query-conditioned, same protocol), per half. The head's threshold is chosen on the
  dev half (the lowest one that flags no more than 5% of dev look-alikes) and then applied,
  once, to the test half.
- LoCoMo (conv-26, conv-30; chat with no labelled updates): the share of memories that are the
  target of a write-time candidate edge (``validity.edges.candidate_edges``: same speaker,
  nearest earlier memories) whose source the head scores at or above that threshold, i.e. the
  memories that would carry a flag whenever retrieved if the head alone judged edges; and the
  same share for the packaged verifier's query-blind edge score at its context threshold.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from memsieve.embed import MiniLMEncoder
from memsieve.eval.datasets import load_task
from memsieve.eval.harness import machine
from memsieve.validity.edges import candidate_edges, verifier_judge
from memsieve.validity.verifier import Verifier
from operation_utterances import generate as operation_utterances

DATA = Path(__file__).resolve().parent / "data" / "natural_updates.jsonl"
LOCOMO_CONVS = ("conv-26", "conv-30")
MAX_FALSE_ON_DEV = 0.05


def train_head(encoder: MiniLMEncoder, seed: int, n: int) -> tuple[LogisticRegression, float]:
    data = operation_utterances(n, seed)
    x = encoder.encode([t for t, _ in data])
    y = np.array([label for _, label in data])
    head = LogisticRegression(C=0.3, max_iter=4000, class_weight="balanced").fit(x, y)
    val = operation_utterances(2000, seed + 1000)
    p = head.predict_proba(encoder.encode([t for t, _ in val]))[:, 1]
    return head, float(roc_auc_score([label for _, label in val], p))


def natural(head, verifier: Verifier, encoder: MiniLMEncoder) -> dict[str, dict]:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    out: dict[str, dict] = {}
    for half in ("dev", "test"):
        labels, op, ver = [], [], []
        for h in (r for r in rows if r["split"] == half):
            turns = h["turns"]
            i = [t["id"] for t in turns].index(h["target"])
            later, target = turns[i + 1 :], turns[i]["text"]
            if not later:
                continue
            texts = [t["text"] for t in later]
            op.append(float(head.predict_proba(encoder.encode(texts))[:, 1].max()))
            ver.append(float(verifier.score([(h["query"], s, target) for s in texts]).max()))
            labels.append(h["label"] == "superseded")
        out[half] = {"labels": np.array(labels), "op": np.array(op), "verifier": np.array(ver)}
    return out


def dev_threshold(dev: dict) -> float:
    """The lowest head score that flags at most ``MAX_FALSE_ON_DEV`` of dev look-alikes."""
    neg = np.sort(dev["op"][~dev["labels"]])[::-1]
    allowed = int(np.floor(MAX_FALSE_ON_DEV * len(neg)))
    return float(np.nextafter(neg[allowed], 1.0)) if allowed < len(neg) else 0.0


def locomo_share(encoder: MiniLMEncoder, judges: dict, thresholds: dict) -> dict[str, dict]:
    task = load_task("locomo")
    out = {}
    for conv in LOCOMO_CONVS:
        mems = [m for m in task.memories if m.namespace == conv]
        vectors = encoder.encode([m.text for m in mems])
        row = {"memories": len(mems)}
        for name, judge in judges.items():
            edges = candidate_edges(mems, vectors, judge=judge)
            flagged = {e.target for e in edges if e.score >= thresholds[name]}
            row[name] = {"edges": len(edges), "flagged_share": len(flagged) / len(mems)}
        out[conv] = row
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--n", type=int, default=16000, help="training utterances")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    encoder, verifier = MiniLMEncoder(), Verifier.load()
    t0 = time.perf_counter()
    head, val_auc = train_head(encoder, args.seed, args.n)
    train_s = time.perf_counter() - t0
    nat = natural(head, verifier, encoder)
    th = dev_threshold(nat["dev"])
    report: dict = {"machine": machine(), "seed": args.seed, "n_train": args.n,
                    "train_seconds": round(train_s, 1), "generator_val_auc": val_auc,
                    "threshold_from_dev": th, "natural": {}}
    ctx = verifier.thresholds["context_threshold"]
    print(f"head: generator val AUC {val_auc:.3f}, trained in {train_s:.0f} s; "
          f"threshold from dev {th:.3f}; verifier context threshold {ctx:.3f}")
    print("| half | n updates / look-alikes | head AUC | verifier AUC | head flags updates "
          "| head false flags | verifier flags | verifier false flags |")
    print("|---|---|---|---|---|---|---|---|")
    for half, d in nat.items():
        y = d["labels"]
        row = {"updates": int(y.sum()), "lookalikes": int((~y).sum()),
               "op_auc": float(roc_auc_score(y, d["op"])),
               "verifier_auc": float(roc_auc_score(y, d["verifier"])),
               "op_flag": float((d["op"][y] >= th).mean()),
               "op_false": float((d["op"][~y] >= th).mean()),
               "verifier_flag": float((d["verifier"][y] >= ctx).mean()),
               "verifier_false": float((d["verifier"][~y] >= ctx).mean())}
        report["natural"][half] = row
        print(f"| {half} | {row['updates']} / {row['lookalikes']} | {row['op_auc']:.3f} | "
              f"{row['verifier_auc']:.3f} | {row['op_flag']:.2f} | {row['op_false']:.2f} | "
              f"{row['verifier_flag']:.2f} | {row['verifier_false']:.2f} |")
    judges = {"head": lambda pairs: (head.predict_proba(encoder.encode([s for s, _ in pairs]))[:, 1]
                                     if pairs else np.zeros(0)),
              "verifier": verifier_judge(verifier)}
    report["locomo"] = locomo_share(encoder, judges, {"head": th, "verifier": ctx})
    for conv, row in report["locomo"].items():
        print(f"LoCoMo {conv}: {row['memories']} memories; flagged share (target of a "
              f"judged edge) head {row['head']['flagged_share']:.3f}, "
              f"verifier {row['verifier']['flagged_share']:.3f} ({row['head']['edges']} edges)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
