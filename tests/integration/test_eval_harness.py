"""The eval harness end to end on a tiny LoCoMo-shaped file, with the hashing encoder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memsieve.embed import HashingEncoder
from memsieve.eval import evaluate
from memsieve.eval.datasets import load_locomo, split

TOPICS = [
    ("cello", "I started learning the cello last spring"),
    ("garden", "We planted tomatoes in the garden on Sunday"),
    ("nurse", "My sister works as a nurse in Leeds"),
    ("marathon", "I ran my first marathon in Berlin"),
    ("painting", "I painted a sunset over the lake yesterday"),
    ("puppy", "We adopted a puppy named Biscuit"),
]


def tiny_locomo(n_conv: int = 4) -> list[dict]:
    samples = []
    for c in range(n_conv):
        turns = []
        for t, (_, text) in enumerate(TOPICS):
            speaker = "Ann" if t % 2 == 0 else "Bob"
            turns.append({"speaker": speaker, "dia_id": f"D1:{t + 1}", "text": f"{text} ({c})"})
        qa = [
            {"question": f"What did {'Ann' if t % 2 == 0 else 'Bob'} say about the {topic}?",
             "answer": "x", "evidence": [f"D1:{t + 1}"], "category": 1 + t % 4}
            for t, (topic, _) in enumerate(TOPICS)
        ]
        qa.append({"question": "broken", "answer": "x", "evidence": ["D:9:9"], "category": 2})
        qa.append({"question": "no evidence", "answer": "x", "evidence": [], "category": 5})
        samples.append({
            "sample_id": f"conv-{c}",
            "conversation": {"speaker_a": "Ann", "speaker_b": "Bob",
                             "session_1_date_time": "1:56 pm on 8 May, 2023",
                             "session_1": turns},
            "qa": qa,
        })
    return samples


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny_locomo.json"
    path.write_text(json.dumps(tiny_locomo()))
    return path


def test_loader_drops_and_counts_bad_evidence(locomo_file: Path):
    task = load_locomo(locomo_file)
    assert len(task.memories) == 4 * len(TOPICS)
    assert len(task.queries) == 4 * len(TOPICS)
    assert task.dropped["empty evidence (query)"] == 4
    assert task.dropped["no resolvable evidence (query)"] == 4
    assert all(q.gold <= {m.id for m in task.memories} for q in task.queries)


def test_split_is_sorted_shuffle_halves():
    groups = [f"conv-{i}" for i in (3, 1, 0, 2)]
    train, test = split(groups, 7)
    assert sorted(train + test) == sorted(groups) and not set(train) & set(test)
    assert split(groups, 7) == (train, test)
    assert len(train) == len(test) == 2


@pytest.mark.parametrize("pipeline", ["bm25", "dense", "fusion", "rrf"])
def test_turn_level_schema(locomo_file: Path, pipeline: str):
    result = evaluate("locomo", locomo_file, [pipeline], seeds=[1, 2],
                      encoder_factory=HashingEncoder, progress=False)
    for key in ("dataset", "level", "pipeline", "seeds", "n_queries", "metrics", "ci95",
                "per_category", "latency_ms", "machine"):
        assert key in result
    assert set(result["metrics"]) == {"R@10", "H@1", "H@5", "MRR", "NDCG@5"}
    assert all(0.0 <= v <= 1.0 for v in result["metrics"].values())
    assert all(0.0 <= lo <= hi <= 1.0 for lo, hi in result["ci95"].values())
    assert result["n_queries"] == 2 * 2 * len(TOPICS)  # 2 seeds x 2 test conversations
    assert "total" in result["latency_ms"] and "first_stage" in result["latency_ms"]
    if pipeline == "fusion":
        assert all(0.0 <= p["alpha"] <= 1.0 for p in result["params"])


def test_session_level_and_compare(locomo_file: Path):
    result = evaluate("locomo", locomo_file, ["fusion", "bm25"], level="session", seeds=[3],
                      encoder_factory=HashingEncoder, progress=False)
    assert result["level"] == "session"
    # one session per conversation: the only session is always rank 1
    assert result["metrics"]["H@1"] == 1.0
    diff = result["compare"]["diff"]["MRR"]
    assert diff["diff"] == 0.0 and diff["ci95"] == [0.0, 0.0]


def test_cli_eval_writes_json_report_plot(locomo_file: Path, tmp_path: Path):
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, "-m", "memsieve", "eval", "locomo", "--data", str(locomo_file),
         "--pipeline", "fusion", "--compare", "bm25", "--seeds", "1", "--model", "hash",
         "--json", str(out), "--report", str(tmp_path / "r.md"), "--plot",
         str(tmp_path / "r.png"), "--no-progress"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["pipeline"] == "fusion" and result["compare"]["pipeline"] == "bm25"
    assert "| fusion |" in (tmp_path / "r.md").read_text()
    assert (tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"
    assert "locomo turn fusion" in proc.stdout


def test_memora_retrieval_task_uses_current_evidence_as_gold(data_dir):
    from collections import Counter

    from memsieve.eval.datasets import load_task

    task = load_task("memora", data_dir / "memora" / "weekly")
    ids = {m.id for m in task.memories}
    assert len(task.groups) == 10 and len(task.queries) > 100
    assert all(q.gold <= ids and q.namespace in q.qid for q in task.queries)
    assert set(Counter(q.category for q in task.queries)) == {"remembering", "reasoning",
                                                               "recommending"}
    assert task.dropped.get("no current-evidence turn (query)", 0) > 0  # counted, not hidden


def test_locomo_plus_stitches_each_cue_into_a_locomo_conversation(data_dir):
    from memsieve.eval.datasets import load_task

    plus = load_task("locomo_plus", data_dir / "locomo_plus" / "locomo_plus.json")
    locomo = load_task("locomo", data_dir / "locomo" / "locomo10.json")
    assert plus.groups == locomo.groups and plus.based_on == "locomo"
    assert split(plus.groups, 7) == split(locomo.groups, 7)  # the same halves per seed
    base = {m.id: m for m in locomo.memories}
    stitched = [m for m in plus.memories if m.id not in base]
    assert [m.id for m in plus.memories if m.id in base] == list(base)  # LoCoMo's order kept
    assert len(plus.queries) == 401 and not plus.dropped
    by_id = {m.id: m for m in plus.memories}
    for q in plus.queries:
        cue = [by_id[g] for g in q.gold]
        assert {m.namespace for m in cue} == {q.namespace}
        assert {m.session_id for m in cue} == set(q.gold_sessions)
        assert not q.text.startswith(("A:", "B:"))
    assert len(stitched) == sum(len(q.gold) for q in plus.queries)
    speakers = {(m.namespace, m.speaker) for m in locomo.memories}
    assert all((m.namespace, m.speaker) in speakers for m in stitched)


def test_locomo_plus_refuses_bad_files_and_counts_bad_items(locomo_file: Path, tmp_path: Path):
    from memsieve.errors import ConfigError, NotFound
    from memsieve.eval.datasets import load_locomo_plus

    plus = tmp_path / "plus" / "locomo_plus.json"
    plus.parent.mkdir()
    plus.write_text(json.dumps([]))
    with pytest.raises(NotFound, match="locomo10.json"):
        load_locomo_plus(plus)
    (plus.parent / "locomo10.json").write_text(locomo_file.read_text())
    plus.write_text(json.dumps({"not": "a list"}))
    with pytest.raises(ConfigError, match="a list"):
        load_locomo_plus(plus)
    good = {"cue_dialogue": "A: I sold my bike.\nB: Oh no!", "trigger_query": "A: My legs miss it.",
            "relation_type": "state"}
    plus.write_text(json.dumps([good, "junk", {"cue_dialogue": 5}]))
    task = load_locomo_plus(plus.parent)  # a folder finds its locomo_plus.json
    assert [q.text for q in task.queries] == ["My legs miss it."]
    assert task.dropped == {"cue or trigger not in 'A: text' form (query)": 2}
    by_id = {m.id: m for m in task.memories}
    assert [by_id[g].text for g in sorted(task.queries[0].gold)] == ["Ann: I sold my bike.",
                                                                     "Bob: Oh no!"]
