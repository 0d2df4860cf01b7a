"""The full-scale sweep benchmark goes on where it stopped: same stand-in URL, finished runs skipped."""

from pathlib import Path

from scripts.bench_sweep import standin_for, sweep_command


def test_a_later_piece_serves_on_the_first_pieces_port(tmp_path):
    first = standin_for(tmp_path)
    url = first.url
    first.close()
    second = standin_for(tmp_path)
    try:
        assert second.url == url                # the URL is in every run's config hash
    finally:
        second.close()


def test_the_sweep_skips_runs_an_earlier_piece_completed(tmp_path):
    command = sweep_command("paper_main_server", "http://127.0.0.1:1/v1", tmp_path, smoke=False, jobs=None,
                            sweep_dir=tmp_path / "sweep-3")
    assert "skip_complete=true" in command
    assert f"hydra.sweep.dir={Path(tmp_path) / 'sweep-3'}" in command
    assert f"results_root={tmp_path / 'runs'}" in command
