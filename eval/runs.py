"""Reading run directories back: what ``eval tables`` and the plots are built from (nothing else)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from eval.identity import setup_hash
from eval.labels import DEFAULT_PROFILE


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
        return self.method.partition("@")[2] or DEFAULT_PROFILE

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

    @property
    def streams(self) -> list[str]:
        """The streams the run ingested (its memory statistics name each)."""
        try:
            return [str(s.get("sample_id")) for s in self.memory_stats]
        except (OSError, ValueError):
            return []

    @cached_property
    def setup_hash(self) -> str:
        """The hash of what the run computed, whichever streams it ran on: its resolved config
        without the keys that only present it and without ``data.subset.sample_ids``."""
        return setup_hash(self.config or {})

    @property
    def members(self) -> tuple[RunRecord, ...]:
        return (self,)

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


def latest_runs(runs: list[RunRecord]) -> dict[tuple[str, str, str], RunGroup]:
    """Per (method, data, llm): the latest complete run, pooled with the earlier runs of the same
    setup on other streams (:func:`pooled`). Run directories sort by start time."""
    by_key: dict[tuple[str, str, str], list[RunRecord]] = {}
    for run in sorted(runs, key=lambda r: r.path.name):
        by_key.setdefault(run.key, []).append(run)
    return {key: pooled(group) for key, group in by_key.items()}


def pooled(runs: list[RunRecord]) -> RunGroup:
    """The latest run (the last of ``runs``), with every earlier run of its setup (the same
    resolved config but for ``data.subset.sample_ids``) that answered other streams, newest first.

    Why: a long experiment is run one stream at a time (``data.subset.sample_ids=[3]``, then
    ``[4]``…), each run short enough to finish and be committed on its own; seeds are scoped per
    stream and question, so the pooled runs score what one run over all those streams would. A run
    of another setup, or on a stream already taken, is left out (the latest wins)."""
    latest = runs[-1]
    setup = latest.setup_hash
    members = [latest]
    taken = set(latest.streams)
    for run in reversed(runs[:-1]):
        if run.setup_hash == setup and not taken & set(run.streams):
            members.append(run)
            taken |= set(run.streams)
    return RunGroup(tuple(members))


@dataclass(frozen=True)
class RunGroup:
    """Runs of one setup on disjoint streams, read as one run: the rows of all, the counts summed.

    It offers what the tables and plots read of a :class:`RunRecord`; a single run is a group of
    one, which reads exactly as the run itself."""

    members: tuple[RunRecord, ...]

    def __post_init__(self) -> None:
        if not self.members:
            raise ValueError("a run group needs at least one run")

    @property
    def latest(self) -> RunRecord:
        return self.members[0]

    key = property(lambda self: self.latest.key)
    label = property(lambda self: self.latest.label)
    data = property(lambda self: self.latest.data)
    method = property(lambda self: self.latest.method)
    llm = property(lambda self: self.latest.llm)
    variant = property(lambda self: self.latest.variant)
    profile = property(lambda self: self.latest.profile)
    config = property(lambda self: self.latest.config)
    env = property(lambda self: self.latest.env)
    path = property(lambda self: self.latest.path)
    prompt_set = property(lambda self: self.latest.prompt_set)

    @property
    def name(self) -> str:
        """The run directories' names, in stream order (one name for a single run)."""
        return " + ".join(run.path.name for run in self._in_stream_order())

    def _in_stream_order(self) -> list[RunRecord]:
        return sorted(self.members, key=lambda run: _stream_order(run.streams))

    @property
    def streams(self) -> list[str]:
        return [s for run in self._in_stream_order() for s in run.streams]

    @property
    def on_subset(self) -> bool:
        return any(run.on_subset for run in self.members)

    @cached_property
    def health(self) -> dict[str, Any]:
        """Healthy when every run is; a flag names its run when there are several."""
        if len(self.members) == 1:
            return self.latest.health
        flags = [f"{run.path.name}: {flag}"
                 for run in self._in_stream_order() for flag in run.health["flags"]]
        return {"healthy": all(run.health["healthy"] for run in self.members), "flags": flags,
                "runs": {run.path.name: run.health for run in self._in_stream_order()}}

    @cached_property
    def metrics(self) -> dict[str, Any]:
        """The latest run's metrics for one run; for several only what adds up (their questions):
        every pooled score comes from the rows (``predictions``)."""
        if len(self.members) == 1:
            return self.latest.metrics
        return {"questions": sum(run.metrics.get("questions", 0) for run in self.members)}

    @cached_property
    def ledger(self) -> dict[str, Any]:
        """The runs' call counts summed per tag, per phase and in total; the rest (model, prompt
        set, decoding) is the setup's, read from the latest run."""
        if len(self.members) == 1:
            return self.latest.ledger
        from clag.llm.ledger import summed_reports

        return summed_reports([run.ledger for run in self.members])

    @cached_property
    def memory_stats(self) -> list[dict[str, Any]]:
        return [s for run in self._in_stream_order() for s in run.memory_stats]

    @cached_property
    def predictions(self) -> list[dict[str, Any]]:
        return [row for run in self._in_stream_order() for row in run.predictions]

    def per_question(self, metric: str) -> dict[str, float]:
        return {k: v for run in self.members for k, v in run.per_question(metric).items()}

    def mean(self, metric: str) -> float | None:
        """The metric's overall mean ×100 over every pooled question where it applies."""
        values = list(self.per_question(metric).values())
        return 100 * sum(values) / len(values) if values else None


def _stream_order(streams: list[str]) -> tuple[int, ...]:
    """Streams sort by number where their ids are numbers (BioASQ's ``3`` before ``10``)."""
    return tuple(int(s) if s.isdigit() else 1 << 30 for s in streams) or (1 << 30,)
