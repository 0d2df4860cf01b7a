"""The committed BioASQ tables are exactly what the committed run records give, byte for byte."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def power_script():
    spec = importlib.util.spec_from_file_location("bioasq_power", REPO / "scripts" / "bioasq_power.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def files_under(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_the_committed_tables_regenerate_byte_for_byte_from_the_committed_runs(tmp_path):
    power = power_script()
    if not power.RUNS.is_dir() or not power.TABLES.is_dir():
        pytest.skip("no committed BioASQ runs or tables yet")
    power.write_tables(out=tmp_path)
    for folder, _streams in power.TABLE_SETS:
        committed, regenerated = files_under(power.TABLES / folder), files_under(tmp_path / folder)
        assert sorted(regenerated) == sorted(committed), folder
        for name, content in committed.items():
            assert regenerated[name] == content, f"{folder}/{name} differs from what the runs give"


def test_the_anchor_repeat_names_the_first_figure_that_moved():
    """``bioasq_power.py anchor``: clag:3 against the anchor's seed-42 figures, one level into
    per-call dicts so a difference names its call; figures outside the compared list are ignored."""
    power = power_script()
    anchor = {"f1_by_question": [0.0, 1.0], "per_tag": {"note": {"calls": 134}, "evolve": {"capped": 9}},
              "cluster_sizes": [52, 48], "run": "a"}
    assert power.figure_differences(anchor, {**anchor, "run": "b"}) == []
    moved = {**anchor, "per_tag": {"note": {"calls": 134}, "evolve": {"capped": 8}}, "cluster_sizes": [52, 47]}
    assert power.figure_differences(anchor, moved) == [
        ("per_tag.evolve", {"capped": 9}, {"capped": 8}), ("cluster_sizes", [52, 48], [52, 47])]


def test_the_power_queue_runs_every_method_on_every_stream_once_claim_by_claim():
    power = power_script()
    assert sorted(m for tier in power.CLAIM_TIERS for m in tier) == sorted(power.METHODS)
    names = [job.name for job in power.jobs()]
    assert len(names) == len(set(names))
    assert {(m, s) for m in power.METHODS for s in power.STREAMS} <= {(j.method, j.stream) for j in power.jobs()}
    # the paper's main table is decided on all its streams before an ablation starts
    last_main = max(i for i, j in enumerate(power.jobs()) if j.method in power.CLAIM_TIERS[0])
    first_ablation = min(i for i, j in enumerate(power.jobs()) if j.method not in power.CLAIM_TIERS[0])
    assert last_main < first_ablation


def test_every_pending_power_job_composes_and_pools_with_its_methods_committed_streams():
    """A queue that runs for days must not meet a config error at its fifth job, nor file a
    stream under a setup its other streams do not share (the tables pool by setup hash)."""
    import yaml
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from eval.identity import setup_hash
    from eval.labels import describe
    from eval.resources import CONFIG_DIR

    power = power_script()
    for method in power.METHODS:
        job = power.Job(method, power.STREAMS[-1])
        overrides = [a for a in job.command()[4:] if not a.startswith("results_root=")]
        with initialize_config_dir(str(CONFIG_DIR), version_base=None):
            config = OmegaConf.to_container(compose("config", overrides=overrides), resolve=True)
        assert describe(config)["method"] == f"{method}@{power.SETUP_NAME}"
        committed = sorted((power.RUNS / "bioasq").glob(f"{method}@{power.SETUP_NAME}/*/*/config.yaml"))
        for path in committed:
            recorded = yaml.safe_load(path.read_text(encoding="utf-8"))
            assert setup_hash(recorded) == setup_hash(config), path.parent.name
