"""A resumed run's CPU figure is the run's, not its last start's, and says when part is missing."""

import json

from eval.app import process_cost
from eval.results import earlier_cpu, latest_complete_run


def write_status(run_dir, **status):
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "status.json").write_text(json.dumps(status))


def test_a_process_stopped_cleanly_hands_its_cpu_seconds_on(tmp_path):
    write_status(tmp_path, state="interrupted", cpu_s=12.5, cpu_whole=True)
    assert earlier_cpu(tmp_path) == (12.5, True)
    cost = process_cost(cpu_started=0.0, earlier_s=12.5, earlier_whole=True)
    assert cost["cpu_s"] >= 12.5 and cost["cpu_whole"] is True


def test_a_killed_process_leaves_the_sum_marked_partial(tmp_path):
    write_status(tmp_path, state="running", resumed=False)          # SIGKILL: no figure written
    assert earlier_cpu(tmp_path) == (0.0, False)
    write_status(tmp_path, state="interrupted", cpu_s=3.0, cpu_whole=False)   # a partial sum carries on
    assert earlier_cpu(tmp_path) == (3.0, False)
    assert process_cost(0.0, *earlier_cpu(tmp_path))["cpu_whole"] is False


def test_a_status_written_before_cpu_was_recorded_counts_as_partial(tmp_path):
    write_status(tmp_path, state="interrupted")
    assert earlier_cpu(tmp_path) == (0.0, False)
    assert earlier_cpu(tmp_path / "missing") == (0.0, False)


def test_latest_complete_run_ignores_other_configs_and_unfinished_runs(tmp_path):
    base = tmp_path / "bioasq" / "rag" / "none"
    write_status(base / "20261201-000000-aaaaaaaa", state="complete")
    write_status(base / "20261202-000000-aaaaaaaa", state="interrupted")
    write_status(base / "20261203-000000-bbbbbbbb", state="complete")
    assert latest_complete_run(tmp_path, "bioasq", "rag", "none", "aaaaaaaa") == base / "20261201-000000-aaaaaaaa"
    write_status(base / "20261204-000000-aaaaaaaa-1", state="complete")
    assert latest_complete_run(tmp_path, "bioasq", "rag", "none", "aaaaaaaa") == base / "20261204-000000-aaaaaaaa-1"
    assert latest_complete_run(tmp_path, "bioasq", "rag", "none", "cccccccc") is None


def test_the_power_progress_table_marks_a_cpu_figure_that_misses_a_session(tmp_path):
    from scripts.bioasq_power import cpu_time

    write_status(tmp_path, state="complete", cpu_s=7200.0, cpu_whole=True)
    assert cpu_time(tmp_path, resumed=True) == "; CPU 2.00 h"
    write_status(tmp_path, state="complete", cpu_s=3600.0)          # recorded before cpu_whole
    assert cpu_time(tmp_path, resumed=False) == "; CPU 1.00 h"
    assert cpu_time(tmp_path, resumed=True) == "; CPU 1.00 h (partial)"
    write_status(tmp_path, state="complete")
    assert cpu_time(tmp_path, resumed=False) == ""
