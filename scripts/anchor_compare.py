"""The quality anchor: this harness's CLAG runs on BioASQ stream 3 beside the reference code's own
run with the same model (``results/anchor/reference_run.json``), one column per setup.

    python scripts/anchor_compare.py [--runs results/runs] [--out results/anchor] [--fresh]

Every run of ``clag@reference…`` on ``bioasq`` with ``qwen2.5-coder-0.5b`` that answered stream 3
counts; seeds of one setup are pooled (F1's 95% CI: bootstrap over the pooled questions; each
seed's own F1 is listed too). All per-call figures come from each run's health report and call
log, so they are the same counts ``python -m eval health RUN_DIR`` prints. Writes
``comparison.md`` and ``comparison.json`` and copies each run's ``health.json`` under ``runs/``;
the runs those files already record stay in the table when their directories are gone (``--fresh``:
only the runs found).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TAGS = ("note", "evolve", "route", "profile", "keywords", "select", "answer")
STREAM_MEMORIES = 134


def _json(path: Path, default: Any = None) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return default


def _quoted(arg: str) -> str:
    """An argument as a shell needs it (Hydra's list overrides carry brackets)."""
    return f"'{arg}'" if any(c in arg for c in "[]{}*? ") and not arg.startswith("python ") else arg


def run_figures(run: Any) -> dict[str, Any]:
    """One run's figures, from its own files."""
    from eval.health import health_report, read_calls

    health = health_report(run.path)
    calls = read_calls(run.path)
    stream = next((s for s in run.memory_stats if str(s.get("sample_id")) == "3"), {})
    predictions = list(run.predictions)
    per_tag: dict[str, Any] = {}
    for tag in TAGS:
        rows = [c for c in calls if c.get("tag") == tag]
        tag_health = health["by_tag"].get(tag, {})
        per_tag[tag] = {"calls": len(rows), "capped": tag_health.get("capped", 0),
                        "unparsable": tag_health.get("unparsable", 0),
                        "placeholder_copies": tag_health.get("placeholder_copies", 0),
                        "prompt_tokens_mean": round(statistics.fmean(c["prompt_tokens"] for c in rows))
                        if rows else None,
                        "output_tokens_mean": round(statistics.fmean(c["completion_tokens"] for c in rows))
                        if rows else None}
    ingest_calls = sum(1 for c in calls if str(c.get("scope", "")).startswith("ingest"))
    method = (health.get("method") or {}).get("clag") or {}
    scores = [p.get("scores") or {} for p in predictions]
    parsed_evolutions = [c["reply"] for c in calls
                         if c.get("tag") == "evolve" and c.get("parsed") and isinstance(c.get("reply"), dict)]
    return {
        "run": run.path.name, "seed": run.config.get("seed"), "health": health,
        "command": " ".join(_quoted(a) for a in run.env.get("argv", [])), "git": run.env.get("git"),
        "f1_by_question": [s.get("f1", 0.0) for s in scores],
        "bleu1_by_question": [s.get("bleu1", 0.0) for s in scores],
        "recall@10_by_question": [s["recall@10"] for s in scores if s.get("recall@10") is not None],
        "calls_per_memory": round(ingest_calls / (stream.get("memories") or STREAM_MEMORIES), 2),
        "questions": method.get("questions"),
        "per_tag": per_tag,
        "route_example_answers": method.get("route_example_answers"),
        "routing_decisions": method.get("routing_decisions"),
        "global_fallbacks": method.get("global_fallbacks"),
        "selections_naming_missing_clusters": method.get("selections_naming_missing_clusters"),
        "clusters": method.get("clusters"), "cluster_sizes": method.get("cluster_sizes"),
        "evolutions": stream.get("evolutions"), "links": stream.get("links"),
        "should_evolve": {"true": sum(1 for r in parsed_evolutions if r.get("should_evolve") is True),
                          "parsed": len(parsed_evolutions)},
        "singletons": sum(1 for size in method.get("cluster_sizes") or [] if size == 1),
        # why each routed note went where it did: a refused route (low_similarity, invalid_choice)
        # opens a new cluster, so these count the singletons' causes
        "routing_reasons": dict((stream.get("routing") or {}).get("reasons") or {}),
    }


def _pooled(runs: list[dict[str, Any]], key: str) -> dict[str, Any]:
    import numpy as np

    from eval.stats import bootstrap_mean

    values = np.array([v for r in runs for v in r[key]], dtype=float) * 100
    if values.size == 0:
        return {}
    interval = bootstrap_mean(values)
    return {"mean": round(interval.estimate, 2),
            "low": round(interval.low, 2), "high": round(interval.high, 2),
            "per_seed": [round(100 * statistics.fmean(r[key]), 2) if r[key] else None for r in runs]}


#: a count is called different from the reference's when a two-sided Fisher exact test against the
#: seeds' pooled count rejects at this level (and the reference's rate is outside the seeds' range)
ALPHA = 0.05


def _reference_should_evolve(reference: dict[str, Any]) -> tuple[int, int]:
    """The reference evolves a note exactly when a parsed reply says should_evolve (a parse failure
    reads as false), so its evolutions are its true answers among the parsed evolution replies."""
    return reference["evolutions"], reference["evolve"]["calls"] - reference["evolve"]["unparsable"]


def _count_figures(reference: dict[str, Any]) -> list[tuple[str, tuple[int, int], Any]]:
    """The per-call figures that are counts of some total: (label, the reference's (k, n), a run's (k, n))."""
    def tag(t: str, field: str) -> Any:
        return lambda r: (r["per_tag"][t][field], r["per_tag"][t]["calls"])

    ref_note, ref_evolve = reference["note"], reference["evolve"]
    return [
        ("note analyses at the cap", (ref_note["capped"], ref_note["calls"]), tag("note", "capped")),
        ("note analyses unparsable", (ref_note["unparsable"], ref_note["calls"]), tag("note", "unparsable")),
        ("evolutions at the cap", (ref_evolve["capped"], ref_evolve["calls"]), tag("evolve", "capped")),
        ("evolutions unparsable", (ref_evolve["unparsable"], ref_evolve["calls"]),
         tag("evolve", "unparsable")),
        ("should_evolve true, of parsed evolutions", _reference_should_evolve(reference),
         lambda r: (r["should_evolve"]["true"], r["should_evolve"]["parsed"])),
        ("keyword queries copying the example",
         (reference["keywords"]["placeholder_copies"], reference["keywords"]["calls"]),
         tag("keywords", "placeholder_copies")),
        ("router answers = the example id",
         (reference["route_example_answers"], reference["routing_decisions"]),
         lambda r: (r["route_example_answers"], r["routing_decisions"])),
        ("routes refused by the cosine floor (a new cluster each)",
         (reference["routing_reasons"]["low_similarity"], reference["routing_decisions"]),
         lambda r: (r["routing_reasons"].get("low_similarity", 0), r["routing_decisions"])),
        ("routes naming a cluster not among the candidates (a new cluster each)",
         (reference["routing_reasons"]["invalid_choice"], reference["routing_decisions"]),
         lambda r: (r["routing_reasons"].get("invalid_choice", 0), r["routing_decisions"])),
        ("selections naming a missing cluster", (reference["selections_naming_missing_clusters"], 20),
         lambda r: (r["selections_naming_missing_clusters"], r["questions"])),
        ("global-search fallbacks", (reference["global_fallbacks"], 20),
         lambda r: (r["global_fallbacks"], r["questions"])),
    ]


def _value_figures(reference: dict[str, Any]) -> list[tuple[str, float, Any]]:
    """Figures with no total to test a rate against: only the seeds' range speaks for them."""
    return [
        ("calls per memory (ingest)", reference["calls_per_memory"], lambda r: r["calls_per_memory"]),
        ("clusters", reference["clusters"], lambda r: r["clusters"]),
        ("singleton clusters", sum(1 for s in reference["cluster_sizes"] if s == 1),
         lambda r: r["singletons"]),
        ("evolution output tokens (mean)", reference["evolve"]["output_tokens_mean"],
         lambda r: r["per_tag"]["evolve"]["output_tokens_mean"]),
        ("answer prompt tokens (mean)", reference["answer"]["prompt_tokens_mean"],
         lambda r: r["per_tag"]["answer"]["prompt_tokens_mean"]),
    ]


def reference_checks(setup: dict[str, Any], reference: dict[str, Any]) -> list[dict[str, Any]]:
    """Is each of the reference run's figures one the harness's seeds could have produced?

    The reference is one run, so the question is not "equal" but "inside the harness's spread":
    F1 and R@10 lie in the seeds' range or the pooled 95% CI; a count of some total (capped calls,
    fallbacks, ...) lies in the seeds' range of rates or a two-sided Fisher exact test of the
    reference's k of n against the seeds' pooled count does not reject at ``ALPHA``. The test
    takes the calls as independent; within one stream they are not (an evolution rewrites later
    prompts), which widens the true spread, so the test errs towards "different", not "within".
    Other figures have only the seeds' range."""
    from scipy.stats import fisher_exact  # scikit-learn, a declared dependency, requires SciPy

    runs = setup["runs"]
    checks: list[dict[str, Any]] = []
    for key, label in (("f1", "F1"), ("recall@10", "R@10")):
        pooled, ref = setup[key], reference.get(key)
        if not pooled or ref is None:
            continue
        seeds = [v for v in pooled["per_seed"] if v is not None]
        in_range = min(seeds) <= ref <= max(seeds)
        in_ci = pooled["low"] <= ref <= pooled["high"]
        checks.append({"figure": label, "reference": ref, "seeds": seeds, "p": None,
                       "test": "seeds' range or pooled 95% CI", "within": in_range or in_ci})
    for label, (ref_k, ref_n), get in _count_figures(reference):
        counts = [get(r) for r in runs]
        counts = [(k, n) for k, n in counts if k is not None and n]
        if not counts or not ref_n:
            continue
        rates = [k / n for k, n in counts]
        pooled_k, pooled_n = sum(k for k, _ in counts), sum(n for _, n in counts)
        p = float(fisher_exact([[ref_k, ref_n - ref_k], [pooled_k, pooled_n - pooled_k]])[1])
        in_range = min(rates) <= ref_k / ref_n <= max(rates)
        checks.append({"figure": label, "reference": f"{ref_k} of {ref_n}",
                       "seeds": [f"{k} of {n}" for k, n in counts], "p": round(p, 3),
                       "test": f"seeds' range or Fisher p ≥ {ALPHA}", "within": in_range or p >= ALPHA})
    for label, ref, get in _value_figures(reference):
        seeds = [v for v in (get(r) for r in runs) if v is not None]
        if not seeds or ref is None:
            continue
        checks.append({"figure": label, "reference": ref, "seeds": seeds, "p": None,
                       "test": "seeds' range", "within": min(seeds) <= ref <= max(seeds)})
    return checks


def serving_suffix(config: dict[str, Any], model_id: str | None = None) -> str:
    """Runs of one setup that the model served differently are different columns. llama.cpp's
    server replays the prompt into the repetition penalty's window; llama-cpp-python (in
    process, and behind the reference's server) penalises only the tokens it generated, so the
    same preset decodes differently on the two. The engine is read from what ran, the ledger's
    model id (``llama-server:…`` or ``llamacpp:…``): ``server=auto`` picks one by the policy, and
    a config read again with later code could pick another; runs without one fall back to that."""
    llm = config.get("llm") or {}
    if llm.get("backend") != "llamacpp":
        return ""
    if model_id:
        in_process = model_id.startswith("llamacpp:")
    else:
        from clag.llm.models import served_by_llama_server

        in_process = not served_by_llama_server(llm)
    if in_process:
        return " (in process)"
    if llm.get("repeat_window_includes_prompt") and float(llm.get("repetition_penalty") or 1.0) != 1.0:
        # the same preset on the server with the prompt kept in the window: the run that tells the
        # window's effect from the field order's (a name of its own, so it is never pooled)
        return " (llama-server, prompt in the penalty window)"
    return ""


def stored_runs(out: Path) -> dict[str, list[dict[str, Any]]]:
    """The runs an earlier comparison under ``out`` recorded, by setup: their figures from
    ``comparison.json``, their health from the copy under ``runs/``. A run directory is a
    machine's own (its request log alone is megabytes) and is not committed; its figures are, so
    a new seed can join the table without every earlier run on disk."""
    stored = _json(out / "comparison.json", {}) or {}
    groups: dict[str, list[dict[str, Any]]] = {}
    for name, setup in stored.items():
        for run in setup.get("runs", []):
            health = _json(out / "runs" / f"{name}-seed{run.get('seed')}" / "health.json")
            if health is None:
                continue          # a figure without its health report would drop its flags
            groups.setdefault(name, []).append({**run, "health": health})
    return groups


def compare(runs_root: Path, stored: dict[str, list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    """Every matching run under ``runs_root``, plus the ``stored`` runs not found there (a run read
    from its directory wins over its stored figures: it is the same run, read by today's code)."""
    from eval.runs import find_runs

    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run in find_runs(runs_root):
        if run.data != "bioasq" or run.llm != "qwen2.5-coder-0.5b" or not run.label.startswith("clag@"):
            continue
        if run.profile.partition("+")[0] != "reference":
            continue    # the anchor compares the paper's prompts; robust's runs are in docs/profiles.md
        subset = ((run.config.get("data") or {}).get("subset") or {}).get("sample_ids")
        if list(subset or []) != [3]:
            continue
        model_id = (_json(run.path / "ledger.json", {}) or {}).get("model_id")
        groups[run.profile + serving_suffix(run.config, model_id)].append(run_figures(run))
    for name, runs in (stored or {}).items():
        found = {r["run"] for r in groups.get(name, [])}
        groups[name].extend(r for r in runs if r["run"] not in found)
    setups = {}
    for setup, runs in sorted(groups.items()):
        runs.sort(key=lambda r: (r["seed"] is None, r["seed"]))
        setups[setup] = {"runs": runs, "f1": _pooled(runs, "f1_by_question"),
                         "bleu1": _pooled(runs, "bleu1_by_question"),
                         "recall@10": _pooled(runs, "recall@10_by_question")}
    return setups


def checks_markdown(setups: dict[str, Any], reference: dict[str, Any]) -> list[str]:
    """One table per setup: each reference figure, the seeds' values, and whether it is within."""
    lines: list[str] = []
    for name, setup in setups.items():
        checks = reference_checks(setup, reference)
        within = sum(1 for c in checks if c["within"])
        lines += ["", f"Is the reference run within what `{name}` does over its {len(setup['runs'])} "
                      f"seed(s)? {within} of {len(checks)} figures are:", "",
                  "| figure | reference code | seeds | test | Fisher p | within |",
                  "|---|---|---|---|---|---|"]
        for c in checks:
            p = "—" if c["p"] is None else f"{c['p']:.3f}"
            seeds = "; ".join(map(str, c["seeds"]))
            lines.append(f"| {c['figure']} | {c['reference']} | {seeds} | {c['test']} "
                         f"| {p} | {'yes' if c['within'] else '**no**'} |")
    return lines


def _mean(runs: list[dict[str, Any]], get: Any) -> str:
    values = [get(r) for r in runs]
    values = [v for v in values if v is not None]
    if not values:
        return "—"
    text = "; ".join(str(v) for v in values)
    return text if len(values) == 1 else f"{text} (per seed)"


def to_markdown(setups: dict[str, Any], reference: dict[str, Any]) -> str:
    names = list(setups)
    header = "| | reference code | " + " | ".join(f"`{n}`" for n in names) + " |"
    lines = [header, "|---" * (len(names) + 2) + "|"]

    def row(label: str, ref: Any, get: Any) -> None:
        cells = [_mean(setups[n]["runs"], get) for n in names]
        lines.append(f"| {label} | {ref if ref is not None else '—'} | " + " | ".join(cells) + " |")

    def pooled(key: str) -> list[str]:
        out = []
        for n in names:
            p = setups[n][key]
            text = f"{p['mean']:.2f} [{p['low']:.2f}, {p['high']:.2f}]; seeds {p['per_seed']}" if p else "—"
            out.append(text)
        return out

    lines.append("| seeds | 1 (42) | " + " | ".join(", ".join(str(r["seed"]) for r in setups[n]["runs"])
                                                    for n in names) + " |")
    lines.append(f"| F1 (pooled, 95% CI) | ≈ {reference['f1']} | " + " | ".join(pooled("f1")) + " |")
    lines.append("| BLEU-1 (pooled) | — | " + " | ".join(pooled("bleu1")) + " |")
    lines.append(f"| R@10 (pooled) | ≈ {reference['recall@10']} | " + " | ".join(pooled("recall@10")) + " |")
    row("calls per memory (ingest)", reference["calls_per_memory"], lambda r: r["calls_per_memory"])
    for tag in ("note", "evolve"):
        ref = reference[tag]
        row(f"{tag}: capped / unparsable", f"{ref['capped']} / {ref['unparsable']} of {ref['calls']}",
            lambda r, t=tag: f"{r['per_tag'][t]['capped']} / {r['per_tag'][t]['unparsable']} of "
                             f"{r['per_tag'][t]['calls']}")
        row(f"{tag}: prompt / output tokens (mean)",
            f"{ref['prompt_tokens_mean']} / {ref['output_tokens_mean']}",
            lambda r, t=tag: (f"{r['per_tag'][t]['prompt_tokens_mean']} / "
                              f"{r['per_tag'][t]['output_tokens_mean']}")
            if r["per_tag"][t]["calls"] else None)
    row("keyword queries copying the example", f"{reference['keywords']['placeholder_copies']} of 20",
        lambda r: f"{r['per_tag']['keywords']['placeholder_copies']} of {r['per_tag']['keywords']['calls']}")
    row("router answers = the example id",
        f"{reference['route_example_answers']} of {reference['routing_decisions']}",
        lambda r: f"{r['route_example_answers']} of {r['routing_decisions']}")
    row("selections naming a missing cluster", f"{reference['selections_naming_missing_clusters']} of 20",
        lambda r: f"{r['selections_naming_missing_clusters']} of {r['questions']}")
    row("global-search fallbacks", f"{reference['global_fallbacks']} of 20",
        lambda r: f"{r['global_fallbacks']} of {r['questions']}")
    row("clusters (sizes)", f"{reference['clusters']} ({', '.join(map(str, reference['cluster_sizes']))})",
        lambda r: f"{r['clusters']} ({', '.join(map(str, r['cluster_sizes'] or []))})")
    row("notes evolved", reference["evolutions"], lambda r: r["evolutions"])
    row("links made (notes with links: reference)", reference["notes_with_links"], lambda r: r["links"])
    row("answer prompt tokens (mean)", reference["answer"]["prompt_tokens_mean"],
        lambda r: r["per_tag"]["answer"]["prompt_tokens_mean"])
    row("should_evolve true, of parsed evolutions", "{} of {}".format(*_reference_should_evolve(reference)),
        lambda r: f"{r['should_evolve']['true']} of {r['should_evolve']['parsed']}")
    row("health flags (listed below)", "—", lambda r: len(r["health"]["flags"]))
    lines += checks_markdown(setups, reference)
    lines.append("")
    lines.append("Health flags (`python -m eval health RUN_DIR`):")
    lines.append("")
    for n in names:
        for r in setups[n]["runs"]:
            lines.append(f"- `{n}`, seed {r['seed']}: " + ("; ".join(r["health"]["flags"]) or "none"))
    lines.append("")
    lines.append("Commands (each run's own `env.json`):")
    lines.append("")
    for n in names:
        for r in setups[n]["runs"]:
            lines.append(f"- `{n}`, seed {r['seed']}: `{r['command']}`")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=ROOT / "results" / "runs")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "anchor")
    parser.add_argument("--fresh", action="store_true",
                        help="only the runs under --runs, not those the existing comparison.json records")
    ns = parser.parse_args()
    reference = _json(ns.out / "reference_run.json")
    if reference is None:
        sys.exit(f"error: {ns.out / 'reference_run.json'} is missing (the reference run's figures)")
    setups = compare(ns.runs, stored=None if ns.fresh else stored_runs(ns.out))
    if not setups:
        sys.exit(f"error: no CLAG run of BioASQ stream 3 with qwen2.5-coder-0.5b under {ns.runs}")
    table = to_markdown(setups, reference)
    (ns.out / "comparison.md").write_text(table, encoding="utf-8")
    slim = {name: {**{k: v for k, v in s.items() if k != "runs"},
                   "reference_checks": reference_checks(s, reference),
                   "runs": [{k: v for k, v in r.items() if k != "health"} for r in s["runs"]]}
            for name, s in setups.items()}
    (ns.out / "comparison.json").write_text(json.dumps(slim, indent=1), encoding="utf-8")
    for name, s in setups.items():
        for r in s["runs"]:
            target = ns.out / "runs" / f"{name}-seed{r['seed']}"
            target.mkdir(parents=True, exist_ok=True)
            (target / "health.json").write_text(json.dumps({**r["health"], "run": r["run"]}, indent=1),
                                                encoding="utf-8")
    print(table)


if __name__ == "__main__":
    main()
