"""Reading run directories back: what ``eval tables`` and the plots are built from (nothing else)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True)
class RunRecord:
    path: Path
    data: str
    method: str
    llm: str

    @property
    def key(self) -> tuple[str, str, str]:
        """(method, data, llm); a variant's method reads ``rag [retriever=bm25]``: its own row."""
        return self.label, self.data, self.llm

    @property
    def label(self) -> str:
        """The method as tables and plots show it: its directory name, plus its variant if any."""
        return f"{self.method} [{self.variant}]" if self.variant else self.method

    @property
    def variant(self) -> str:
        """The method options the run's command changed, shortened (``method.memory.retriever=bm25``
        → ``retriever=bm25``); empty for the method as its config file defines it."""
        changed = []
        for override in self.env.get("overrides") or []:
            key, _, value = override.lstrip("+~").partition("=")
            if key.startswith("method."):
                short = key.removeprefix("method.").removeprefix("memory.")
                changed.append(f"{short}={value}" if value else f"~{short}")
        return ",".join(sorted(changed))

    @property
    def profile(self) -> str:
        """The run's profile: ``robust`` unless its method directory says ``<method>@<profile>``."""
        return self.method.partition("@")[2] or "robust"

    @cached_property
    def health(self) -> dict[str, Any]:
        """The run's health report (``health.json``; computed from its files for a run made
        before health reports existed)."""
        from eval.health import health_report

        stored = self.path / "health.json"
        if stored.is_file():
            try:
                return json.loads(stored.read_text(encoding="utf-8"))
            except ValueError:
                pass
        return health_report(self.path)

    @property
    def on_subset(self) -> bool:
        """Whether the run used only part of its dataset (any ``data.subset.*`` option set)."""
        subset = (self.config.get("data") or {}).get("subset") or {}
        return any(value is not None for value in subset.values())

    @property
    def prompt_set(self) -> str | None:
        try:
            return self.ledger.get("prompt_set")
        except (OSError, ValueError):
            return None

    def _json(self, name: str) -> Any:
        return json.loads((self.path / name).read_text(encoding="utf-8"))

    @cached_property
    def status(self) -> dict[str, Any]:
        return self._json("status.json")

    @cached_property
    def env(self) -> dict[str, Any]:
        """``env.json`` (empty for runs written before it existed)."""
        try:
            return self._json("env.json")
        except (OSError, ValueError):
            return {}

    @cached_property
    def metrics(self) -> dict[str, Any]:
        return self._json("metrics.json")

    @cached_property
    def ledger(self) -> dict[str, Any]:
        return self._json("ledger.json")

    @cached_property
    def memory_stats(self) -> list[dict[str, Any]]:
        return self._json("memory_stats.json")

    @cached_property
    def config(self) -> dict[str, Any]:
        return yaml.safe_load((self.path / "config.yaml").read_text(encoding="utf-8"))

    @cached_property
    def predictions(self) -> list[dict[str, Any]]:
        lines = (self.path / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def mean(self, metric: str, group: str = "overall") -> float | None:
        value = self.metrics.get(group, {}).get(metric)
        return None if value is None else 100 * value["mean"]

    def per_question(self, metric: str) -> dict[str, float]:
        return {f"{r['sample_id']}::{r['question_id']}": r["scores"][metric] for r in self.predictions
                if r["scores"].get(metric) is not None}


def find_runs(root: Path) -> list[RunRecord]:
    """Every complete run under ``root`` (``<data>/<method>/<llm>/<run>/status.json``)."""
    runs = []
    for status in sorted(Path(root).glob("*/*/*/*/status.json")):
        run_dir = status.parent
        data, method, llm = run_dir.parts[-4:-1]
        if data.startswith("_"):
            continue
        try:
            state = json.loads(status.read_text(encoding="utf-8")).get("state")
        except (json.JSONDecodeError, OSError):
            continue
        if state == "complete" and (run_dir / "metrics.json").is_file():
            runs.append(RunRecord(run_dir, data, method, llm))
    return runs


def latest_runs(runs: list[RunRecord]) -> dict[tuple[str, str, str], RunRecord]:
    """The latest complete run per (method, data, llm); run directories sort by start time."""
    latest: dict[tuple[str, str, str], RunRecord] = {}
    for run in sorted(runs, key=lambda r: r.path.name):
        latest[run.key] = run
    return latest
