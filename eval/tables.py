"""``python -m eval tables``: the paper's tables rebuilt from run directories, beside the
published numbers, plus what the paper lacks.

Only run directories are read (the latest complete run per method × dataset × LLM). Each table
is written as Markdown, LaTeX and CSV. Paper tables have one row per published cell:
reproduced value, published value, delta, and — for every method but CLAG — the paired
bootstrap 95% CI of its difference from CLAG on the same questions. Missing runs show "—".
Values are ×100. Scores come from the runs' per-question rows (the DataFrame of
:func:`eval.results.load`), so a notebook recomputes any cell; run records add what is not
per question (cost, subset, prompt set, which runs exist). The ``claims`` table decides each claim
of :mod:`eval.claims` from the same paired intervals.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.claims import CLAIMS, Claim, decide, decide_claim
from eval.labels import DEFAULT_PROFILE, method_label
from eval.resources import paper_dir
from eval.runs import RunGroup, find_runs, latest_runs
from eval.stats import Interval, bootstrap_mean, paired_difference

PAPER_DIR = paper_dir()
REFERENCE_METHOD = "clag"
#: ingest-time call tags, for ledgers written before calls were also counted by phase
INGEST_TAGS = ("note", "evolve", "route", "profile", "gam_memorize", "memoryos_continuity", "memoryos_meta",
               "memoryos_summary", "memoryos_keywords", "memoryos_page_keywords", "memoryos_profile",
               "memoryos_assistant", "memoryos_profile_merge")
METRIC_LABELS = {"f1": "F1", "bleu1": "BLEU-1", "e_precision": "E-Prec", "e_recall": "E-Recall",
                 "e_f1": "E-F1", "recall@5": "R@5", "recall@10": "R@10", "ndcg@10": "nDCG@10",
                 "f1_corrected": "F1 (corrected c5)"}
PAPER_TABLES = {
    "final_answer": ("Final-answer F1 / BLEU-1", "final_answer.csv", ("f1", "bleu1")),
    "bioasq_retrieval": ("BioASQ evidence retrieval", "bioasq_retrieval.csv",
                         ("e_precision", "e_recall", "e_f1", "recall@5", "recall@10", "ndcg@10")),
    "clustering_ablation": ("Clustering ablation on BioASQ", "clustering_ablation.csv", ("f1", "bleu1")),
}


@dataclass
class Table:
    name: str
    title: str
    columns: list[str]
    rows: list[list[Any]]
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------- rendering

#: the mark on a value from a run on a subset, beside a published full-dataset number
SUBSET_MARK = "†"


@dataclass(frozen=True)
class OnSubset:
    """A reproduced value (or its Δ) from a run on a subset (``data.subset.*``, smoke): shown
    with :data:`SUBSET_MARK` in the cell itself, so it is never read as a reproduction."""

    value: float


#: the mark on a value from a run whose health report flags it (``eval.health``)
HEALTH_MARK = "⚠"


@dataclass(frozen=True)
class Flagged:
    """A value from a run whose model misbehaved past the config's ``health`` thresholds (capped
    calls, copied examples, global fallbacks): the cell carries :data:`HEALTH_MARK` and the
    table's notes say which run and why."""

    value: Any


#: the mark on a rank metric of a method whose retrieved ids are not a ranking (GAM's page lines)
UNRANKED_MARK = "‡"


@dataclass(frozen=True)
class NotComparable:
    """A rank metric (R@10, nDCG@10, …) of a run whose retrieved ids are not a ranking of turns:
    shown with :data:`UNRANKED_MARK` and explained in the notes, never as if it were comparable."""

    value: float


@dataclass(frozen=True)
class Mean:
    """A mean with its bootstrap 95% CI, shown ×100 without a sign (differences keep theirs)."""

    interval: Interval


def _cell(value: Any, digits: int = 2, missing: str = "—", sign: str = "+") -> str:
    """A cell as shown (two decimals, signed differences) or, with ``_csv_cell``'s arguments, at
    full precision; the marks stay on it in every format."""
    if value is None:
        return missing
    if isinstance(value, Flagged):
        return _cell(value.value, digits, missing, sign) + HEALTH_MARK
    if isinstance(value, Mean):
        i = value.interval
        return f"{100 * i.estimate:.{digits}f} [{100 * i.low:.{digits}f}, {100 * i.high:.{digits}f}]"
    if isinstance(value, OnSubset):
        return f"{value.value:.{digits}f}{SUBSET_MARK}"
    if isinstance(value, NotComparable):
        return _cell(value.value, digits, missing, sign) + UNRANKED_MARK
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    if isinstance(value, Interval):
        spec = f"{sign}.{digits}f"
        return f"{100 * value.estimate:{spec}} [{100 * value.low:{spec}}, {100 * value.high:{spec}}]"
    return str(value)


def _csv_cell(value: Any) -> str:
    """A CSV cell: four decimals, unsigned, empty when missing."""
    return _cell(value, digits=4, missing="", sign="")


def to_markdown(table: Table) -> str:
    lines = [f"### {table.title}", "", "| " + " | ".join(table.columns) + " |",
             "|" + "|".join("---" for _ in table.columns) + "|"]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in table.rows]
    lines += [""] + [f"- {note}" for note in table.notes]
    return "\n".join(lines).rstrip() + "\n"


def _latex_escape(text: str) -> str:
    for char, escaped in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"),
                          ("#", r"\#"), ("—", "--"), ("Δ", r"$\Delta$"),
                          ("−", "$-$"), ("×", r"$\times$")):
        text = text.replace(char, escaped)
    return text


def to_latex(table: Table) -> str:
    spec = "l" * 3 + "r" * (len(table.columns) - 3) if len(table.columns) > 3 else "l" * len(table.columns)
    lines = [r"\begin{table}[t]", r"\centering", r"\small", rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
             " & ".join(_latex_escape(c) for c in table.columns) + r" \\", r"\midrule"]
    lines += [" & ".join(_latex_escape(_cell(v)) for v in row) + r" \\" for row in table.rows]
    lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{_latex_escape(table.title)}}}",
              rf"\label{{tab:{table.name}}}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def to_csv(table: Table) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(table.columns)
    for row in table.rows:
        writer.writerow([_csv_cell(value) for value in row])
    return out.getvalue()


# ---------------------------------------------------------------------------- table builders


def read_published(name: str, paper_dir: Path = PAPER_DIR) -> list[dict[str, str]]:
    with (paper_dir / name).open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


class QuestionScores:
    """The per-question rows of :func:`eval.results.frame_of` for tables: every value a table
    shows is a mean or a paired difference over these rows, so a user's notebook that calls
    :func:`eval.results.load` reproduces any cell."""

    def __init__(self, frame: Any) -> None:
        """``qkey`` names a question across datasets (pooled summaries pair on it)."""
        frame = frame.copy()
        if not frame.empty:
            frame["qkey"] = (frame["data"] + "::" + frame["sample_id"].astype(str) + "::"
                             + frame["question_id"].astype(str))
        self.frame = frame

    @classmethod
    def of(cls, runs: dict[tuple[str, str, str], RunGroup], frame: Any = None) -> QuestionScores:
        from eval.results import frame_of

        return cls(frame_of(runs.values()) if frame is None else frame)

    def rows(self, method: str, data: str, llm: str) -> Any:
        f = self.frame
        if f.empty:
            return f
        return f[(f["method"] == method) & (f["data"] == data) & (f["llm"] == llm)]

    def mean(self, method: str, data: str, llm: str, metric: str,
             category: int | None = None) -> float | None:
        """The metric's mean ×100 over the questions where it applies (None: no such question)."""
        rows = self.rows(method, data, llm)
        if category is not None and not rows.empty:
            rows = rows[rows["category"] == category]
        return _mean_x100(rows, metric)

    def per_question(self, method: str, data: str, llm: str, metric: str) -> dict[str, float]:
        rows = self.rows(method, data, llm)
        if rows.empty or metric not in rows:
            return {}
        rows = rows[rows[metric].notna()]
        return dict(zip(rows["qkey"], rows[metric].astype(float)))


def _versus_reference(scores: QuestionScores, method: str, data: str, llm: str, metric: str,
                      resamples: int, seed: int) -> Interval | None:
    baseline = method_label(REFERENCE_METHOD, _label_parts(method)[1])
    if method == baseline:
        return None
    run = scores.per_question(method, data, llm, metric)
    reference = scores.per_question(baseline, data, llm, metric)
    if not run or not reference:
        return None
    return paired_difference(run, reference, resamples, seed)


def paper_table(name: str, runs: dict[tuple[str, str, str], RunGroup], llm: str,
                paper_dir: Path = PAPER_DIR, resamples: int = 2000, seed: int = 0,
                profile: str = DEFAULT_PROFILE, scores: QuestionScores | None = None) -> Table:
    """The published table beside the runs of one profile (``clag@reference`` under ``reference``):
    runs of different profiles never share a column. Values come from ``scores`` (the runs'
    per-question rows); the runs say which exist, on what subset, with which prompts."""
    scores = scores or QuestionScores.of(runs)
    title, file, metrics = PAPER_TABLES[name]
    rows, missing, used, marked = [], 0, set(), set()
    unhealthy: dict[str, list[str]] = {}
    for published in read_published(file, paper_dir):
        method, data = method_label(published["method"], profile), published["data"]
        used.add((method, data))
        run = runs.get((method, data, llm))
        subset = run is not None and run.on_subset
        for metric in metrics:
            reproduced = scores.mean(method, data, llm, metric) if run is not None else None
            paper_value = float(published[metric])
            if reproduced is None:
                missing += 1
            delta = None if reproduced is None else reproduced - paper_value
            if subset and reproduced is not None and delta is not None:
                reproduced, delta = OnSubset(reproduced), OnSubset(delta)
                marked.add(f"{method}/{data}: {run.metrics['questions']} questions")
            if run is not None and reproduced is not None and not run.health["healthy"]:
                reproduced = Flagged(reproduced)
                unhealthy[f"{method}/{data}: {run.name}"] = run.health["flags"]
            rows.append([published["label"], data, METRIC_LABELS[metric], reproduced, paper_value, delta,
                         _versus_reference(scores, method, data, llm, metric, resamples, seed)])
    notes = [f"Reproduced with llm={llm}; published values use Qwen3-0.6B."]
    used_runs = [r for (m, d) in used if (r := runs.get((m, d, llm))) is not None]
    if name == "bioasq_retrieval" and used_runs:
        chance = chance_by_question(used_runs)
        asked = sorted({q for r in used_runs for q in scores.per_question(r.key[0], r.data, llm, metrics[0])})
        for metric, value in zip(metrics, chance_row(chance, asked, metrics)):
            rows.append([CHANCE_LABEL, "bioasq", METRIC_LABELS[metric], value, None, None, None])
        notes.append(f"{CHANCE_LABEL}: the exact expectation of each metric for a random ranking of each "
                     f"question's stream, over the {len(asked)} questions the runs above answered.")
    # GAM and MemoryOS record None: their calls keep their own wording under every profile
    own_wording = sorted({r.method for r in used_runs if _keeps_own_prompts(r)})
    identities = sorted({r.prompt_set or "unrecorded" for r in used_runs if not _keeps_own_prompts(r)})
    notes.append(f"profile: {profile}; prompt set(s) of these runs: {', '.join(identities) or 'none'}"
                 + (" — the runs used DIFFERENT prompt sets" if len(identities) > 1 else "")
                 + (f"; with their own prompts: {', '.join(own_wording)}" if own_wording else ""))
    if missing:
        notes.append(f"{missing} cell(s) have no complete run (—).")
    if marked:
        notes.append(f"{SUBSET_MARK} run on a subset (data.subset.*), not comparable with the published "
                     f"full-dataset number: {'; '.join(sorted(marked))}.")
    notes.extend(health_notes(unhealthy))
    if name == "bioasq_retrieval":
        notes.append("nDCG@10 is trec_eval's ndcg_cut_10; the paper's definition is unpublished.")
    notes.append("vs CLAG: paired bootstrap mean difference over shared questions, 95% CI.")
    for method, data in sorted(used):
        run = runs.get((method, data, llm))
        if run is not None:
            notes.append(f"run used: {method}/{data}: {run.name} ({run.metrics['questions']} questions)")
    columns = ["Method", "Data", "Metric", "Reproduced", "Published", "Δ", "vs CLAG (95% CI)"]
    return Table(name, f"{title} ({llm}; {profile})", columns, rows, notes)


def _published_value(claim: Claim, method: str, paper_dir: Path) -> float | None:
    if claim.published is None:
        return None
    for row in read_published(PAPER_TABLES[claim.published][1], paper_dir):
        if row["method"] == method and row["data"] == claim.data:
            return float(row[claim.metric])
    return None


def _tokens_per_question(run: RunGroup) -> float:
    """Every token the run's calls cost (prompt and output, ingest and questions) per question."""
    spent = sum(_tokens(phase, kind) for phase in _phase_counts(run) for kind in ("prompt", "completion"))
    return spent / max(run.metrics.get("questions", 0), 1)


def claims_table(runs: dict[tuple[str, str, str], RunGroup], llm: str, paper_dir: Path = PAPER_DIR,
                 resamples: int = 2000, seed: int = 0, profile: str = DEFAULT_PROFILE,
                 scores: QuestionScores | None = None) -> Table:
    """Each claim of :data:`eval.claims.CLAIMS` on a dataset these runs answered: a row per rival
    (the published and the reproduced difference, its paired CI, the questions it pairs on, the
    LLM tokens the claimed winner spent per question against the rival's), then the claim's
    decision (:func:`eval.claims.decide_claim`)."""
    scores = scores or QuestionScores.of(runs)
    answered = {data for (_, data, run_llm) in runs if run_llm == llm}
    rows: list[list[Any]] = []
    unhealthy: dict[str, list[str]] = {}
    for claim in CLAIMS:
        if claim.data not in answered:
            continue
        winner = method_label(claim.method, profile)
        mine = scores.per_question(winner, claim.data, llm, claim.metric)
        decisions = []
        for rival in claim.rivals:
            theirs = scores.per_question(method_label(rival, profile), claim.data, llm, claim.metric)
            interval = paired_difference(mine, theirs, resamples, seed) if mine and theirs else None
            published = [_published_value(claim, m, paper_dir) for m in (claim.method, rival)]
            runs_of = [runs.get((method_label(m, profile), claim.data, llm)) for m in (claim.method, rival)]
            ratio = None
            if all(r is not None for r in runs_of) and runs_of[0].streams == runs_of[1].streams:
                ratio = _tokens_per_question(runs_of[0]) / max(_tokens_per_question(runs_of[1]), 1e-9)
            shown: Any = interval
            flagged = [r for r in runs_of if r is not None and not r.health["healthy"]]
            if interval is not None and flagged:
                shown = Flagged(interval)
                unhealthy.update({f"{r.label}/{r.data}: {r.name}": r.health["flags"] for r in flagged})
            decisions.append(decide(interval))
            rows.append([claim.statement, claim.data, METRIC_LABELS[claim.metric],
                         f"{claim.method} − {rival}",
                         None if None in published else f"{published[0] - published[1]:+.2f}", shown,
                         interval.n if interval else None, None if ratio is None else f"{ratio:.2f}×",
                         decisions[-1]])
        rows.append([claim.statement, claim.data, METRIC_LABELS[claim.metric], "the claim", None, None, None,
                     None, decide_claim(decisions)])
    notes = [f"Reproduced with llm={llm}, profile {profile}; published values use Qwen3-0.6B. Differences "
             "×100: the claimed winner minus the rival, on the questions both answered (paired bootstrap "
             "95% CI).",
             "A pair supports the claim when its CI lies above 0, contradicts it when below, and cannot "
             "decide it otherwise. The claim is supported when every pair is (an intersection-union test: "
             "no correction needed) and contradicted when any pair is (95% per rival, not corrected for the "
             "number of rivals).",
             "LLM tokens: the winner's prompt and output tokens per question (ingest included) over the "
             "rival's, on the same streams (— when their streams differ)."]
    notes.extend(health_notes(unhealthy))
    columns = ["Claim", "Data", "Metric", "Comparison", "Published Δ", "Δ here (95% CI)", "Questions",
               "LLM tokens", "Decision"]
    return Table("claims", f"The paper's claims ({llm}; {profile})", columns, rows, notes)


def _keeps_own_prompts(run: RunGroup) -> bool:
    try:
        return "prompt_set" in run.ledger and run.ledger["prompt_set"] is None
    except (OSError, ValueError):
        return False


def locomo_categories(runs: dict, llm: str, scores: QuestionScores | None = None) -> Table:
    scores = scores or QuestionScores.of(runs)
    names = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
    rows = []
    for method, data, run_llm in sorted(runs):
        if data != "locomo" or run_llm != llm:
            continue
        key = (method, data, llm)
        row = [method] + [scores.mean(*key, "f1", category=c) for c in names]
        row += [scores.mean(*key, "f1_corrected", category=5), scores.mean(*key, "f1"),
                scores.mean(*key, "f1_corrected")]
        rows.append(row)
    columns = ["Method"] + [f"F1 c{c} {n}" for c, n in names.items()]
    columns += ["F1 c5 corrected", "F1 overall", "F1 overall corrected"]
    return Table("locomo_categories", f"LoCoMo F1 by category ({llm})", columns, rows,
                 ["Corrected: category 5 scored against its true label (not mentioned) instead of the "
                  "adversarial answer the paper scores against."])


def _by_data(item: tuple[tuple[str, str, str], RunGroup]) -> tuple[str, str]:
    (method, data, _), _run = item
    return data, method


TABLE_RETRIEVAL_METRICS = ("e_precision", "e_recall", "e_f1", "recall@5", "recall@10", "ndcg@10")
CHANCE_LABEL = "chance (random ranking)"


def chance_by_question(runs: Any) -> dict[str, dict[str, float]]:
    """Per question (``qkey``), what a random ranking of its stream scores (:mod:`eval.metrics.chance`),
    from the runs' own records: each stream's size (``memory_stats``) and each question's gold ids."""
    from eval.metrics.chance import chance_scores

    out: dict[str, dict[str, float]] = {}
    for run in runs:
        sizes = {str(s.get("sample_id")): s.get("turns") for s in run.memory_stats}
        for row in run.predictions:
            gold, size = len(set(row.get("evidence") or [])), sizes.get(str(row["sample_id"]))
            if gold and size and gold <= size:
                out[f"{run.data}::{row['sample_id']}::{row['question_id']}"] = chance_scores(size, gold)
    return out


def chance_row(chance: dict[str, dict[str, float]], questions: Any, metrics: Sequence[str]) -> list[Any]:
    """The chance means over ``questions`` (qkeys), one per metric (None where none has gold)."""
    known = [chance[q] for q in questions if q in chance]
    return [100 * sum(c[m] for c in known) / len(known) if known else None for m in metrics]


def _unranked(rows: Any) -> bool:
    return "retrieval_ranked" in rows and bool((rows["retrieval_ranked"] == False).any())  # noqa: E712


def retrieval_all(runs: dict, llm: str, scores: QuestionScores | None = None) -> Table:
    """Every evidence metric for every method, each dataset closed by its chance row (one per set of
    questions the methods answered), and each method's retrieval unit: a method whose ids are not
    a ranking has its figures marked as not comparable."""
    scores = scores or QuestionScores.of(runs)
    chance = chance_by_question([r for (_, _, run_llm), r in runs.items() if run_llm == llm])
    rows: list[list[Any]] = []
    unranked: set[str] = set()
    by_data: dict[str, list[tuple[str, Any]]] = {}
    for (method, data, run_llm), _run in sorted(runs.items(), key=_by_data):
        if run_llm == llm:
            by_data.setdefault(data, []).append((method, scores.rows(method, data, llm)))
    for data, methods in by_data.items():
        question_sets: list[frozenset[str]] = []
        for method, mine in sorted(methods, key=lambda item: _method_order(item[0])):
            values: list[Any] = [scores.mean(method, data, llm, m) for m in TABLE_RETRIEVAL_METRICS]
            unit = "turns, ranked"
            if _unranked(mine):
                unit = "page lines, unranked"
                values = [None if v is None else NotComparable(v) for v in values]
                unranked.add(method)
            per_question = mine["retrieved_count"].mean() if "retrieved_count" in mine and len(mine) else None
            rows.append([method, data, unit, len(mine), *values,
                         None if per_question is None else float(per_question)])
            keys = frozenset(mine["qkey"]) if "qkey" in mine else frozenset()
            if keys and keys not in question_sets:
                question_sets.append(keys)
        for keys in sorted(question_sets, key=len, reverse=True):
            values = chance_row(chance, keys, TABLE_RETRIEVAL_METRICS)
            if any(v is not None for v in values):
                rows.append([CHANCE_LABEL, data, "turns, random", len(keys), *values, None])
    notes = [f"{CHANCE_LABEL}: the exact expectation of each metric over every ordering of the question's "
             "stream (eval/metrics/chance.py), averaged over the same questions as the rows above it.",
             "nDCG@10 is trec_eval's ndcg_cut_10 (binary gains). Values ×100."]
    if unranked:
        notes.append(f"{UNRANKED_MARK} not comparable: {', '.join(sorted(unranked))} returns the lines of "
                     "the pages it read, in stream order, not a ranking of turns, so its top 10 is the start "
                     "of a page and its rank metrics say nothing about its retrieval.")
    columns = ["Method", "Data", "Unit", "Questions"] + [METRIC_LABELS[m] for m in TABLE_RETRIEVAL_METRICS]
    columns.append("ids / question")
    return Table("retrieval", f"Evidence retrieval on every dataset ({llm})", columns, rows, notes)


def _phase_counts(run: Any) -> tuple[dict[str, float], dict[str, float]]:
    """(ingest, question) counts of a run's ledger; ledgers written before calls were counted by
    phase are split by their call tags."""
    phases = run.ledger.get("by_phase")
    if phases:
        return phases.get("ingest", {}), phases.get("question", {})
    by_tag = run.ledger.get("by_tag", {})
    ingest: dict[str, float] = {}
    asked: dict[str, float] = {}
    for tag, counts in by_tag.items():
        target = ingest if tag in INGEST_TAGS else asked
        for name, value in counts.items():
            target[name] = target.get(name, 0) + value
    return ingest, asked


def _tokens(counts: dict[str, float], kind: str) -> float:
    """Tokens of a phase's calls, cache hits included (what the calls cost when they were made)."""
    return counts.get(f"{kind}_tokens", 0) + counts.get(f"cached_{kind}_tokens", 0)


def cost(runs: dict, llm: str) -> Table:
    """What each run cost, per memory ingested and per question answered, from its ledger (calls,
    tokens) and memory statistics (ingest seconds)."""
    rows = []
    for (method, data, run_llm), run in sorted(runs.items(), key=_by_data):
        if run_llm != llm:
            continue
        questions = max(run.metrics.get("questions", 0), 1)
        memories = max(sum(s.get("turns", 0) for s in run.memory_stats), 1)
        ingest, asked = _phase_counts(run)
        failures = sum(v.get("parse_failures", 0) for v in run.ledger.get("by_tag", {}).values())
        hits = run.ledger.get("total", {}).get("cache_hits", 0)
        restored = sum(1 for s in run.memory_stats if s.get("restored_from_snapshot"))
        seconds = sum(s.get("ingest_seconds", 0.0) for s in run.memory_stats
                      if not s.get("restored_from_snapshot"))
        per_memory = [ingest.get("calls", 0), _tokens(ingest, "prompt"), _tokens(ingest, "completion"),
                      seconds]
        per_question = [asked.get("calls", 0), _tokens(asked, "prompt"), _tokens(asked, "completion")]
        rows.append([method, data, memories, *(float(v / memories) for v in per_memory),
                     *(float(v / questions) for v in per_question), failures, hits, restored])
    return Table("cost", f"LLM cost ({llm})",
                 ["Method", "Data", "memories", "calls / memory", "prompt tokens / memory",
                  "output tokens / memory", "ingest s / memory", "calls / question",
                  "prompt tokens / question", "output tokens / question", "parse failures", "cache hits",
                  "streams restored"], rows,
                 ["Tokens count every call, a cache hit at what it cost when it was made (ledgers from "
                  "before cache hits kept their tokens count fresh calls only). Per memory: the ingest "
                  "phase; per question: the question phase.",
                  "ingest s / memory: wall time of ingestion (memory_stats), on whatever machine ran it and "
                  "whatever else ran beside it; a cache hit costs no time.",
                  "A stream restored from its memory snapshot made no ingest call in that run; compare "
                  "costs on runs whose 'streams restored' is 0."])


def _label_parts(label: str) -> tuple[str, str | None]:
    """``"clag@reference [k=v]"`` → ``("clag", "reference")``: a row label's method and profile."""
    name, _, profile = label.partition(" [")[0].partition("@")
    return name, profile or None


#: the order methods are listed in (others follow, sorted)
METHOD_ORDER = ("rag", "gam", "memoryos", "amem", "clag", "clag_kmeans", "clag_cosine", "clag_plus")


def _method_order(label: str) -> tuple[int, str]:
    name = _label_parts(label)[0]
    return (METHOD_ORDER.index(name) if name in METHOD_ORDER else len(METHOD_ORDER)), label


def health_notes(unhealthy: dict[str, list[str]]) -> list[str]:
    """One note per flagged run: which, and why (the thresholds are config ``health``)."""
    return [f"{HEALTH_MARK} not to be trusted — the run's health report flags it: {run}: {'; '.join(flags)}"
            for run, flags in sorted(unhealthy.items())]


def _mean_x100(rows: Any, column: str) -> float | None:
    values = rows[column].dropna() if column in rows else []
    return float(100 * values.mean()) if len(values) else None


def method_summary(frame: Any, llm: str, resamples: int = 2000, seed: int = 0) -> Table:
    """Every method × dataset of one LLM from :func:`eval.results.load`'s rows: F1 with its
    bootstrap CI, BLEU-1, R@10, and F1's paired difference from CLAG (same profile) on the same
    questions; ``all`` pools a method's questions over the datasets it ran on."""
    rows: list[list[Any]] = []
    unhealthy: dict[str, list[str]] = {}
    if frame.empty:
        return Table("summary", f"Every method, every dataset ({llm})", [], [], ["No complete runs."])
    frame = QuestionScores(frame[frame["llm"] == llm]).frame
    datasets = sorted(frame["data"].unique())
    for data in [*datasets, "all"]:
        part = frame if data == "all" else frame[frame["data"] == data]
        for method in sorted(part["method"].unique(), key=_method_order):
            mine = part[part["method"] == method]
            if data == "all" and mine["data"].nunique() < 2:
                continue
            f1 = mine["f1"].dropna()
            reference = method_label(REFERENCE_METHOD, _label_parts(method)[1])
            baseline = part[part["method"] == reference]
            versus = None
            if method != reference and not baseline.empty:
                versus = paired_difference(dict(zip(mine["qkey"], mine["f1"])),
                                           dict(zip(baseline["qkey"], baseline["f1"])), resamples, seed)
            f1_cell: Any = Mean(bootstrap_mean(f1.to_numpy(), resamples, seed)) if len(f1) else None
            if f1_cell is not None and "health_flagged" in mine and mine["health_flagged"].any():
                f1_cell = Flagged(f1_cell)
                if data != "all":
                    flagged_runs = mine.loc[mine["health_flagged"], ["run", "health_flags"]]
                    for run, flags in flagged_runs.drop_duplicates("run").itertuples(index=False):
                        unhealthy[f"{method}/{data}: {run}"] = str(flags).split("; ")
            rows.append([method, data, len(mine), f1_cell,
                         _mean_x100(mine, "bleu1"), _mean_x100(mine, "recall@10"), versus])
    notes = ["F1 [95% CI]: bootstrap over questions; vs CLAG: paired bootstrap over the questions both "
             "answered (F1 difference, 95% CI). Values ×100."]
    subset_runs = sorted(frame.loc[frame["on_subset"], "data"].unique())
    if subset_runs:
        notes.append(f"Runs on a subset (data.subset.*): {', '.join(subset_runs)} — not the paper's "
                     "full datasets.")
    notes.extend(health_notes(unhealthy))
    columns = ["Method", "Data", "Questions", "F1 [95% CI]", "BLEU-1", "R@10", "F1 vs CLAG (95% CI)"]
    return Table("summary", f"Every method, every dataset ({llm})", columns, rows, notes)


def setups_of(runs: dict, llm: str) -> list[str]:
    """The setups (profile, request format, decoding preset) that ``llm``'s runs were made under,
    the default first: the paper tables show each, so no run is hidden behind a flag."""
    found = {run.profile for (_, _, run_llm), run in runs.items() if run_llm == llm}
    return sorted(found or {DEFAULT_PROFILE}, key=lambda p: (p != DEFAULT_PROFILE, p))


def build_tables(runs_root: Path, llm: str | None = None, paper_dir: Path = PAPER_DIR,
                 resamples: int = 2000, seed: int = 0, profile: str | None = None,
                 streams: Sequence[str] | None = None) -> dict[str, list[Table]]:
    """Tables per LLM found among the runs (or only ``llm``); the paper's tables once per setup
    found (or only ``profile``'s), named ``<table>@<setup>`` when there are several. ``streams``
    keeps only the runs made on those streams, so that every method is scored on the same
    questions."""
    from eval.results import frame_of

    runs = chosen_runs(runs_root, streams)
    frame = frame_of(runs.values())      # the same records: each predictions file is read once
    scores = QuestionScores(frame)
    llms = sorted({key[2] for key in runs}) if llm is None else [llm]
    out: dict[str, list[Table]] = {}
    for name in llms:
        tables = [method_summary(frame, name, resamples, seed)]
        setups = [profile] if profile else setups_of(runs, name)
        for setup in setups:
            for table_name in PAPER_TABLES:
                table = paper_table(table_name, runs, name, paper_dir, resamples, seed, setup, scores)
                if len(setups) > 1:
                    table.name = f"{table_name}@{setup}"
                tables.append(table)
            claims = claims_table(runs, name, paper_dir, resamples, seed, setup, scores)
            if len(setups) > 1:
                claims.name = f"claims@{setup}"
            tables.append(claims)
        tables += [locomo_categories(runs, name, scores), retrieval_all(runs, name, scores), cost(runs, name)]
        out[name] = tables
    return out


def write_tables(tables: dict[str, list[Table]], out_dir: Path) -> list[Path]:
    written = []
    for llm, llm_tables in tables.items():
        folder = out_dir / llm
        folder.mkdir(parents=True, exist_ok=True)
        index = [f"# Tables ({llm})", ""]
        for table in llm_tables:
            for suffix, render in ((".md", to_markdown), (".tex", to_latex), (".csv", to_csv)):
                path = folder / f"{table.name}{suffix}"
                path.write_text(render(table), encoding="utf-8")
                written.append(path)
            index.append(to_markdown(table))
        (folder / "README.md").write_text("\n".join(index), encoding="utf-8")
        written.append(folder / "README.md")
    return written


def chosen_runs(runs_root: Path,
                streams: Sequence[str] | None = None) -> dict[tuple[str, str, str], RunGroup]:
    """The runs the tables show: per method × dataset × LLM the latest setup's runs, pooled over
    streams (:func:`eval.runs.latest_runs`), only those made on ``streams`` when given."""
    found = find_runs(runs_root)
    if streams is not None:
        wanted = {str(s) for s in streams}
        found = [run for run in found if run.streams and set(run.streams) <= wanted]
    return latest_runs(found)


def runs_used(runs_root: Path, streams: Sequence[str] | None = None) -> Sequence[RunGroup]:
    """The runs the tables show, for the plots."""
    return list(chosen_runs(runs_root, streams).values())
