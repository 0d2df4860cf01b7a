"""Did the model do the task? A run's health, computed from its own files.

A score is only worth something when the model did what the prompts asked. This report reads a
run directory — ``calls.jsonl`` (every call's reply shape), ``placeholders.json`` (the example
values its prompt templates show), ``memory_stats.json``, ``predictions.jsonl``, ``config.yaml``
and ``ledger.json`` — and says, per call tag and overall, how often the model ran to the token
cap (in whitespace or in repeated text), replied unparsably, left required fields empty or
copied the prompt's example values; and per method, what its memory did with that (routing
answers equal to the prompt's example id, selections of clusters that do not exist, questions
that fell back to a global search, clusters and links formed). It is a function of the files:
a resumed or re-scored run gets the same report. Runs made before ``calls.jsonl`` existed get
the ledger's counters only (``source: ledger``).

Thresholds (config ``health``) turn the figures into flags that tables show beside a score.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clag.placeholders import ID_TAGS, copied, normalise
from clag.prompts import REFERENCE_ROUTE_EXAMPLE

#: the defaults of config ``health`` (a run's own config.yaml may say otherwise)
DEFAULT_THRESHOLDS = {
    "capped": 0.10,             # share of all calls that ran to max_tokens
    "unparsable": 0.10,         # share of structured calls whose reply did not parse
    "placeholder": 0.20,        # share of one tag's calls that copied an example value
    "global_fallback": 0.50,    # share of a CLAG run's questions searched globally
    "errors": 0.0,              # share of all calls that failed after retries: any, by default
}


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:      # a line cut by a kill: the rest still counts
                continue
    return rows


def _json(path: Path, default: Any) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return default


def read_calls(run_dir: Path) -> list[dict[str, Any]]:
    """The run's calls, each once: a resumed run asks the calls of a stream it re-ingests again
    (from the cache), so a (scope, request) seen before is the same call."""
    seen: set[tuple[str, str]] = set()
    calls = []
    for call in _jsonl(run_dir / "calls.jsonl"):
        identity = (call.get("scope", ""), call.get("key", ""))
        if identity[1] and identity in seen:
            continue
        seen.add(identity)
        calls.append(call)
    return calls


def _tag_stats(calls: list[dict[str, Any]], shown: list[str], tag: str) -> dict[str, Any]:
    structured = [c for c in calls if c.get("structured")]
    tokens = [int(c.get("completion_tokens") or 0) for c in calls if c.get("completion_tokens")]
    copies: Counter[str] = Counter()
    copying_calls = 0
    if shown and tag not in ID_TAGS:
        for call in calls:
            values = copied(call.get("reply", call.get("text", "")), shown)
            if values:
                copying_calls += 1
                copies.update(normalise(v) for v in values)
    return {
        "calls": len(calls),
        "cached": sum(1 for c in calls if c.get("cached")),
        "capped": sum(1 for c in calls if c.get("finish_reason") == "length"),
        "capped_whitespace": sum(1 for c in calls if c.get("capped") == "whitespace"),
        "capped_repeat": sum(1 for c in calls if c.get("capped") == "repeat"),
        "structured": len(structured),
        "unparsable": sum(1 for c in structured if c.get("parsed") is False
                          and c.get("finish_reason") != "error"),
        "schema_violations": sum(1 for c in structured if c.get("schema_violation")),
        "errors": sum(1 for c in calls if c.get("finish_reason") == "error"),
        "empty_fields": sum(1 for c in structured if c.get("empty_fields")),
        "placeholder_copies": copying_calls,
        "top_copies": dict(copies.most_common(3)),
        "output_tokens_mean": round(statistics.fmean(tokens), 1) if tokens else None,
        "output_tokens_max": max(tokens) if tokens else None,
    }


def _from_ledger(ledger: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """What an older run's ledger can say (no reply shapes, no copies)."""
    out = {}
    for tag, stats in (ledger.get("by_tag") or {}).items():
        out[tag] = {"calls": stats.get("calls", 0), "cached": stats.get("cache_hits", 0),
                    "capped": stats.get("truncated", 0), "unparsable": stats.get("parse_failures", 0),
                    "schema_violations": stats.get("schema_violations", 0), "errors": stats.get("errors", 0)}
    return out


def _overall(by_tag: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    keys = ("calls", "cached", "capped", "capped_whitespace", "capped_repeat", "structured", "unparsable",
            "schema_violations", "errors", "empty_fields", "placeholder_copies")
    total = {k: sum(int(stats.get(k) or 0) for stats in by_tag.values()) for k in keys}
    calls = max(total["calls"], 1)
    total["capped_rate"] = round(total["capped"] / calls, 4)
    total["unparsable_rate"] = round(total["unparsable"] / max(total["structured"], 1), 4)
    worst = max(by_tag.items(), key=lambda item: (item[1].get("capped") or 0) / max(item[1]["calls"], 1),
                default=None)
    total["loops_most"] = worst[0] if worst and worst[1].get("capped") else None
    return total


def _route_example(method_cfg: Mapping[str, Any]) -> str | None:
    """The id the routing prompt shows as its example, when it is a fixed string
    (``clag.router.route_example``'s rule; ``candidate`` shows a real candidate: no copy)."""
    setting = (method_cfg.get("memory") or {}).get("route_example_id")
    if setting == "candidate":
        return None
    return REFERENCE_ROUTE_EXAMPLE if setting is None else str(setting)


def _clag_behaviour(stats: list[dict[str, Any]], predictions: list[dict[str, Any]],
                    calls: list[dict[str, Any]], example: str | None) -> dict[str, Any]:
    decisions = [d for s in stats for d in s.get("routing_log") or []]
    copies = [d for d in decisions if example is not None and d.get("choice") == example]
    reasons = Counter(d.get("reason") for d in decisions)
    sizes = [size for s in stats for size in (s.get("cluster_sizes") or {}).values()]
    clusters_by_stream = {s.get("sample_id"): set((s.get("cluster_sizes") or {}).keys()) for s in stats}
    invented, selections = 0, 0
    for call in calls:
        if call.get("tag") != "select" or not isinstance(call.get("reply"), dict):
            continue
        stream = str(call.get("scope", "")).split(":")[1] if ":" in str(call.get("scope", "")) else None
        known = clusters_by_stream.get(stream, set().union(*clusters_by_stream.values())
                                       if clusters_by_stream else set())
        named = call["reply"].get("selected_clusters")
        selections += 1
        if isinstance(named, list) and any(isinstance(c, str) and c not in known for c in named):
            invented += 1
    modes = Counter((p.get("retrieval_debug") or {}).get("search_mode") for p in predictions)
    questions = sum(modes.values())
    return {
        "routing_decisions": len(decisions),
        "route_example_answers": len(copies),
        "route_example_answers_not_a_candidate": sum(1 for d in copies if d.get("choice") not in
                                                      (d.get("candidates") or [])),
        "route_example_id": example,
        "route_reasons": dict(reasons),
        "selections": selections,
        "selections_naming_missing_clusters": invented,
        "questions": questions,
        "global_fallbacks": modes.get("global", 0),
        "global_fallback_rate": round(modes.get("global", 0) / questions, 4) if questions else None,
        "clusters": len(sizes),
        "cluster_sizes": sorted(sizes, reverse=True),
        "singleton_clusters": sum(1 for size in sizes if size == 1),
    }


def _method_behaviour(run_dir: Path, calls: list[dict[str, Any]], config: Mapping[str, Any]
                      ) -> dict[str, Any]:
    stats = _json(run_dir / "memory_stats.json", [])
    predictions = _jsonl(run_dir / "predictions.jsonl")
    out: dict[str, Any] = {
        "questions": len(predictions),
        "empty_retrievals": sum(1 for p in predictions if not p.get("retrieved_ids")),
    }
    summed = ("memories", "evolutions", "evolution_parse_failures", "links", "memorize_fallbacks",
              "profile_failures", "pages", "segments")
    for key in summed:
        values = [s[key] for s in stats if isinstance(s.get(key), (int, float))]
        if values:
            out[key] = sum(values)
    if any("routing_log" in s for s in stats):
        out["clag"] = _clag_behaviour(stats, predictions, calls,
                                      _route_example(config.get("method") or {}))
    return out


def _flags(by_tag: Mapping[str, Mapping[str, Any]], overall: Mapping[str, Any],
           method: Mapping[str, Any], thresholds: Mapping[str, float]) -> list[str]:
    flags = []
    if overall["calls"] and overall["capped_rate"] > thresholds["capped"]:
        flags.append(f"{overall['capped']} of {overall['calls']} calls ran to the token cap "
                     f"(> {thresholds['capped']:.0%})")
    if overall.get("structured") and overall["unparsable_rate"] > thresholds["unparsable"]:
        flags.append(f"{overall['unparsable']} of {overall['structured']} structured replies did not "
                     f"parse (> {thresholds['unparsable']:.0%})")
    for tag, stats in sorted(by_tag.items()):
        copies = stats.get("placeholder_copies") or 0
        if stats["calls"] and copies / stats["calls"] > thresholds["placeholder"]:
            flags.append(f"{copies} of {stats['calls']} {tag} replies copied the prompt's example "
                         f"(> {thresholds['placeholder']:.0%})")
    if overall["calls"] and overall["errors"] / overall["calls"] > thresholds["errors"]:
        failed = sorted(tag for tag, stats in by_tag.items() if stats.get("errors"))
        flags.append(f"{overall['errors']} of {overall['calls']} calls failed ({', '.join(failed)}): "
                     f"those replies are empty, and their questions score 0")
    clag = method.get("clag") or {}
    rate = clag.get("global_fallback_rate")
    if rate is not None and rate > thresholds["global_fallback"]:
        flags.append(f"{clag['global_fallbacks']} of {clag['questions']} questions fell back to a global "
                     f"search (> {thresholds['global_fallback']:.0%})")
    return flags


def health_report(run_dir: Path, thresholds: Mapping[str, float] | None = None) -> dict[str, Any]:
    """The health of the run in ``run_dir`` (see the module docstring)."""
    run_dir = Path(run_dir)
    config = _read_config(run_dir)
    limits = {**DEFAULT_THRESHOLDS, **(config.get("health") or {}), **(thresholds or {})}
    calls = read_calls(run_dir)
    shown = _json(run_dir / "placeholders.json", {})
    if calls:
        grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for call in calls:
            grouped[str(call.get("tag"))].append(call)
        by_tag = {tag: _tag_stats(group, shown.get(tag, []), tag) for tag, group in sorted(grouped.items())}
        source = "calls.jsonl"
    else:
        by_tag = _from_ledger(_json(run_dir / "ledger.json", {}))
        source = "ledger.json"
    overall = _overall(by_tag)
    method = _method_behaviour(run_dir, calls, config)
    copies: Counter[str] = Counter()
    for stats in by_tag.values():
        copies.update(stats.get("top_copies") or {})
    overall["top_copies"] = dict(copies.most_common(3))
    flags = _flags(by_tag, overall, method, limits)
    return {"run": str(run_dir), "source": source, "thresholds": limits, "healthy": not flags,
            "flags": flags, "overall": overall, "by_tag": by_tag, "method": method}


def _read_config(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "config.yaml"
    if not path.is_file():
        return {}
    import yaml

    try:
        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError:
        return {}


def summary_line(report: Mapping[str, Any]) -> str:
    """One line for the end of a run or of ``score``."""
    o = report["overall"]
    parts = [f"{o['calls']} calls", f"{o['capped']} capped", f"{o['unparsable']} unparsable"]
    if o.get("errors"):
        parts.append(f"{o['errors']} failed")
    if report["source"] == "calls.jsonl":
        parts.append(f"{o['placeholder_copies']} copied the prompt's example")
    clag = (report.get("method") or {}).get("clag")
    if clag and clag.get("questions"):
        parts.append(f"{clag['global_fallbacks']}/{clag['questions']} global-search fallbacks")
    verdict = "ok" if report["healthy"] else "FLAGGED: " + "; ".join(report["flags"])
    return f"health: {', '.join(parts)} — {verdict}"


def format_report(report: Mapping[str, Any]) -> str:
    """The report as a short table a person reads in ten seconds."""
    lines = [f"health of {report['run']} (from {report['source']})"]
    header = (f"{'tag':<16}{'calls':>7}{'capped':>8}{'(ws)':>6}{'unpars.':>9}{'empty':>7}{'copies':>8}"
              f"{'errors':>8}{'out tok':>9}")
    lines += [header, "-" * len(header)]
    for tag, s in report["by_tag"].items():
        mean, whitespace = s.get("output_tokens_mean"), s.get("capped_whitespace") or ""
        lines.append(f"{tag:<16}{s['calls']:>7}{s.get('capped', 0):>8}{whitespace:>6}"
                     f"{s.get('unparsable', 0):>9}{s.get('empty_fields', '-'):>7}"
                     f"{s.get('placeholder_copies', '-'):>8}{s.get('errors', 0):>8}"
                     f"{'' if mean is None else mean:>9}")
    o = report["overall"]
    lines.append(f"{'all':<16}{o['calls']:>7}{o['capped']:>8}{o.get('capped_whitespace') or '':>6}"
                 f"{o['unparsable']:>9}{o.get('empty_fields', 0):>7}{o.get('placeholder_copies', 0):>8}"
                 f"{o['errors']:>8}")
    if o.get("top_copies"):
        lines.append("most copied: " + ", ".join(f"{v!r} ×{n}" for v, n in o["top_copies"].items()))
    if o.get("loops_most"):
        lines.append(f"loops most: {o['loops_most']}")
    method = report.get("method") or {}
    clag = method.get("clag")
    if clag:
        lines.append(f"clag: {clag['clusters']} clusters (sizes {clag['cluster_sizes'][:6]}"
                     f"{' …' if len(clag['cluster_sizes']) > 6 else ''}), "
                     f"{clag['route_example_answers']}/{clag['routing_decisions']} routing answers = the "
                     f"example id {clag['route_example_id']!r} "
                     f"({clag['route_example_answers_not_a_candidate']} not a candidate), "
                     f"{clag['selections_naming_missing_clusters']}/{clag['selections']} selections name a "
                     f"missing cluster, {clag['global_fallbacks']}/{clag['questions']} global fallbacks")
    shown = ("memories", "evolutions", "links", "memorize_fallbacks", "segments")
    extra = [f"{k} {method[k]}" for k in shown if k in method]
    if extra or method.get("empty_retrievals"):
        lines.append(", ".join(extra + [f"empty retrievals {method.get('empty_retrievals', 0)}"
                                        f"/{method.get('questions', 0)}"]))
    lines.append("flags: " + ("none" if report["healthy"] else "; ".join(report["flags"])))
    return "\n".join(lines)


def health_columns(report: Mapping[str, Any]) -> dict[str, Any]:
    """The figures a results DataFrame carries per run (for filtering in a notebook)."""
    o = report["overall"]
    clag = (report.get("method") or {}).get("clag") or {}
    return {"health_flagged": not report["healthy"], "health_flags": "; ".join(report["flags"]),
            "health_capped_rate": o["capped_rate"], "health_unparsable_rate": o["unparsable_rate"],
            "health_placeholder_copies": o.get("placeholder_copies", 0),
            "health_global_fallback_rate": clag.get("global_fallback_rate")}

