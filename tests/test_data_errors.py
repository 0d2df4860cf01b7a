"""Bad inputs give one clear DataError, never a traceback from deep inside a loader."""

import json
import shutil

import pytest

from eval.data import load_dataset
from eval.data.locomo import load_locomo
from eval.data.sources import data_root, resolve
from eval.errors import ConfigError, DataError


def _copy_locomo(data_root, tmp_path):
    target = tmp_path / "locomo" / "locomo10.json"
    target.parent.mkdir(parents=True)
    shutil.copy(data_root / "locomo" / "locomo10.json", target)
    return target


def test_missing_file_names_the_path_and_the_fix(tmp_path):
    with pytest.raises(DataError, match=r"locomo10\.json not found and downloads are off"):
        resolve("locomo/locomo10.json", tmp_path, allow_download=False)


def test_a_changed_byte_fails_the_checksum(data_root, tmp_path):
    target = _copy_locomo(data_root, tmp_path)
    raw = bytearray(target.read_bytes())
    raw[100] = ord("x") if raw[100] != ord("x") else ord("y")
    target.write_bytes(bytes(raw))
    with pytest.raises(DataError, match="does not match its published checksum"):
        load_locomo(tmp_path, download=False)


def test_truncated_json_is_reported_with_its_position(tmp_path):
    bad = tmp_path / "custom.json"
    bad.write_text('[{"sample_id": "x", "conversation": {')
    with pytest.raises(DataError, match=r"not valid JSON \(line 1, column"):
        load_locomo(tmp_path, file="custom.json")


def test_non_utf8_file_is_reported(tmp_path):
    (tmp_path / "custom.json").write_bytes(b"\xff\xfe[]")
    with pytest.raises(DataError, match="not UTF-8"):
        load_locomo(tmp_path, file="custom.json")


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ({"not": "a list"}, "expected a JSON list"),
        ([], "holds no samples"),
        ([{"conversation": {}, "qa": []}], "missing key 'sample_id'"),
        ([{"sample_id": "s", "conversation": {}, "qa": []}], "has no turns"),
        ([{"sample_id": "s", "conversation": {"session_1": [{"speaker": "A", "dia_id": "D1:1"}]},
           "qa": []}], r"session_1\[0\]: missing key 'text'"),
        ([{"sample_id": "s", "conversation": {"session_1": [{"speaker": "A", "dia_id": "D1:1", "text": 3}]},
           "qa": []}], "'text' should be str"),
        ([{"sample_id": "s", "conversation": {"session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "t"}]},
           "qa": [{"question": "q", "category": 1}]}], r"qa\[0\]: missing key 'answer'"),
        ([{"sample_id": "s", "conversation": {"session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "t"}]},
           "qa": [{"question": "q", "category": "1", "answer": "a"}]}], "'category' should be int"),
    ],
)
def test_malformed_records_name_the_sample_and_key(tmp_path, records, message):
    (tmp_path / "custom.json").write_text(json.dumps(records))
    with pytest.raises(DataError, match=message):
        load_locomo(tmp_path, file="custom.json")


def test_a_data_root_that_is_a_file_is_refused(tmp_path):
    afile = tmp_path / "file"
    afile.write_text("")
    with pytest.raises(DataError, match="is a file, not a folder"):
        data_root(afile)


def test_data_root_falls_back_to_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAG_BENCH_DATA", str(tmp_path))
    assert data_root(None) == tmp_path
    (tmp_path / "explicit").mkdir()
    assert data_root(tmp_path / "explicit") == tmp_path / "explicit"
    with pytest.raises(DataError, match="does not exist"):     # a typo is not a new data root
        data_root(tmp_path / "typo")


def test_unknown_dataset_lists_the_valid_ones_and_a_config_without_loader_says_so():
    from eval.cli import check_group_choices

    with pytest.raises(ConfigError, match="valid: bioasq, hotpotqa, locomo"):
        check_group_choices(["data=locomoo"])
    with pytest.raises(ConfigError, match="names no loader"):
        load_dataset({"name": "mine"})


def test_download_verifies_before_the_file_appears(tmp_path):
    from eval.data.sources import download, sha256_of

    source = tmp_path / "src.json"
    source.write_text("[]")
    dest = tmp_path / "root" / "x.json"
    with pytest.raises(DataError, match="does not match its published checksum"):
        download(source.as_uri(), dest, expected_sha256="0" * 64)
    assert not dest.exists() and not list(dest.parent.glob("*.part"))
    download(source.as_uri(), dest, expected_sha256=sha256_of(source))
    assert dest.read_text() == "[]"


def test_unreachable_source_names_the_url_and_the_fix(tmp_path):
    from eval.data.sources import download

    with pytest.raises(DataError, match="could not download .*place the file at"):
        download((tmp_path / "nowhere.json").as_uri(), tmp_path / "x.json", None)


def test_the_loader_takes_the_configs_top_level_keys_its_signature_names(data_root):
    """Each loader argument is stated once, at the top level, where ``data.<key>=…`` overrides it."""
    base = {"name": "bioasq", "root": str(data_root), "download": False, "chunk_size": 5, "num_chunks": 2,
            "golden_glob": "bioasq/taskb_golden/Task10BGoldenEnriched/10B*_golden.json", "seed": 42,
            "dedup_snippets": True, "loader": {"_target_": "eval.data.bioasq.load_bioasq"}}
    dataset = load_dataset(base)
    assert [len(s.questions) for s in dataset.samples] == [5, 5]
    stated_in_the_block = load_dataset({**base, "loader": {**base["loader"], "num_chunks": 3}})
    assert len(stated_in_the_block.samples) == 3
    with pytest.raises(ConfigError, match="loader 'eval.data.bioasq.nope' not found") as raised:
        load_dataset({**base, "loader": {"_target_": "eval.data.bioasq.nope"}})
    assert "\n" not in str(raised.value)


def test_a_subset_with_no_question_is_refused_before_any_model_loads(data_root):
    """BioASQ's first stream answers nothing in its first 16 turns: one line that says what to
    change, exit code 2, and no run directory — before the method or its LLM is built."""
    from tests.test_cli import cli

    proc = cli("run", "method=rag", "data=bioasq", "llm=smollm2-135m", "llm.backend=nonexistent_backend",
               "data.subset.samples=1", "data.subset.turns=16", data_root=data_root, check=False)
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "holds no question" in lines[0] and "pick=most_answerable" in lines[0], proc.stderr
    assert "nonexistent_backend" not in proc.stderr       # the backend was never reached
