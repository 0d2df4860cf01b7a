"""The runner skeleton with a scripted memory and answerer (no LLM): layout and bookkeeping."""

import json

import pytest
from omegaconf import OmegaConf

from clag.types import MemorySystem, Retrieval
from eval.app import execute
from eval.cli import compose
from eval.methods import Answer, MethodRun
from eval.scoring import read_predictions, score_rows


class OverlapMemory(MemorySystem):
    """Ranks stored turns by word overlap with the question: deterministic and LLM-free."""

    def __init__(self):
        self.turns = []
        self.finalized = False

    def ingest(self, turn):
        self.turns.append(turn)

    def finalize(self):
        self.finalized = True

    def retrieve(self, question):
        words = set(question.text.lower().split())
        ranked = sorted(self.turns, key=lambda t: -len(words & set(t.text.lower().split())))[:10]
        return Retrieval([t.id for t in ranked], "\n".join(t.text for t in ranked), {"n": len(self.turns)})

    def stats(self):
        return {"memories": len(self.turns), "finalized": self.finalized}


def build_scripted(cfg):
    calls = {"answer": 0}

    def answer(question, retrieval):
        calls["answer"] += 1
        return Answer(question.answer if calls["answer"] % 2 else "wrong", {"context_chars": len(retrieval.context)})

    return MethodRun(lambda sample: OverlapMemory(), answer, lambda: {"answer": {"calls": calls["answer"]}})


def test_a_run_writes_the_full_results_layout(tmp_path, data_root):
    cfg = OmegaConf.create(compose([
        "data=bioasq", f"data.root={data_root}", "data.subset.samples=1", "data.subset.questions_per_sample=5",
        "~llm", f"results_root={tmp_path}", f"snapshot_dir={tmp_path / 'snapshots'}", "progress=false"]))
    cfg.method = {"name": "scripted", "builder": "tests.test_runner:build_scripted"}
    run_dir = execute(cfg)
    assert run_dir.parent == tmp_path / "bioasq" / "scripted" / "none"
    names = {p.name for p in run_dir.iterdir()}
    assert names == {"config.yaml", "env.json", "predictions.jsonl", "timings.jsonl", "metrics.json", "ledger.json",
                     "memory_stats.json", "status.json", "health.json", ".lock"}
    assert json.loads((run_dir / "status.json").read_text())["state"] == "complete"
    env = json.loads((run_dir / "env.json").read_text())
    assert env["seeds"] == {"run": 42} and "hydra-core" in env["packages"] and "commit" in env["git"]
    assert env["data"]["files"]
    assert OmegaConf.load(run_dir / "config.yaml").data.subset.questions_per_sample == 5

    rows = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 5
    assert [r["scores"]["f1"] for r in rows] == [1.0, 0.0, 1.0, 0.0, 1.0]
    assert all(len(r["retrieved_ids"]) == 10 for r in rows)
    assert json.loads((run_dir / "ledger.json").read_text()) == {"answer": {"calls": 5}}
    stats = json.loads((run_dir / "memory_stats.json").read_text())
    assert stats[0]["memories"] == 300 and stats[0]["finalized"] is True

    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["overall"]["f1"] == {"mean": pytest.approx(0.6), "count": 5}
    # re-scoring the written predictions reproduces the run's metrics exactly
    _, rescored = score_rows(read_predictions(run_dir / "predictions.jsonl"))
    assert rescored == metrics


def test_a_snapshot_is_restored_only_into_the_same_class_and_code(tmp_path, monkeypatch):
    from eval import snapshots

    memory = OverlapMemory()
    memory.ingest("turn")
    path = tmp_path / "s.pkl"
    snapshots.save(memory, path, {"ingest_seconds": 1.0})
    fresh = OverlapMemory()
    assert snapshots.restore(fresh, path) == {"ingest_seconds": 1.0} and fresh.turns == ["turn"]
    monkeypatch.setattr(snapshots, "code_version", lambda: "other code")
    assert snapshots.restore(OverlapMemory(), path) is None
