"""Models assembled from chunk wheels: the bytes are used only when they are the official file's."""

from __future__ import annotations

import hashlib
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from clag.llm.chunked import ChunkedModel, ChunkedModelError, assemble, cached_path, fetch
from clag.llm.models import ModelFileError, model_location


def fake_model(tmp_path: Path, parts: int = 3) -> tuple[ChunkedModel, Path, bytes]:
    """A small model split like the real ones: one ``<module>/data/partNN.bin`` per wheel."""
    chunks = [bytes([i]) * (1000 + 37 * i) for i in range(1, parts + 1)]
    whole = b"".join(chunks)
    model = ChunkedModel(name="toy", file="toy.gguf", package_prefix="toy-chunk-part", parts=parts,
                         version="1.0", bytes=len(whole), sha256=hashlib.sha256(whole).hexdigest(),
                         official="example/toy", licence="Apache-2.0")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for i, chunk in enumerate(chunks, start=1):
        module = f"toy_chunk_part{i}"
        with zipfile.ZipFile(wheels / f"{module}-1.0-py3-none-any.whl", "w") as archive:
            archive.writestr(f"{module}/__init__.py", "")
            archive.writestr(f"{module}/data/part{i:02d}.bin", chunk)
    return model, wheels, whole


def test_assembles_in_part_order_and_verifies(tmp_path: Path) -> None:
    model, wheels, whole = fake_model(tmp_path)
    path = assemble(model, wheels, cache=tmp_path / "cache")
    assert path.read_bytes() == whole
    assert cached_path(model, tmp_path / "cache") == path
    assert fetch(model, cache=tmp_path / "cache") == path          # cached: nothing downloaded
    assert not list((tmp_path / "cache").glob("*.part"))


def test_wrong_bytes_are_refused_and_leave_nothing(tmp_path: Path) -> None:
    model, wheels, _ = fake_model(tmp_path)
    impostor = replace(model, sha256="0" * 64)
    with pytest.raises(ChunkedModelError, match="refusing"):
        assemble(impostor, wheels, cache=tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


def test_missing_part_names_the_package(tmp_path: Path) -> None:
    model, wheels, _ = fake_model(tmp_path)
    (wheels / "toy_chunk_part2-1.0-py3-none-any.whl").unlink()
    with pytest.raises(ChunkedModelError, match="toy_chunk_part2"):
        assemble(model, wheels, cache=tmp_path / "cache")


def test_a_tampered_cached_file_is_refused(tmp_path: Path) -> None:
    model, wheels, whole = fake_model(tmp_path)
    path = assemble(model, wheels, cache=tmp_path / "cache")
    path.write_bytes(whole[:-1] + b"\x00")          # same size, other bytes
    with pytest.raises(ChunkedModelError, match="not example/toy's file"):
        cached_path(model, tmp_path / "cache")


def test_unassembled_model_says_how_to_fetch(tmp_path: Path) -> None:
    cfg = {"name": "qwen2.5-coder-0.5b", "model": "qwen2.5-coder-0.5b", "model_cache": str(tmp_path)}
    with pytest.raises(ModelFileError, match="python -m eval models fetch qwen2.5-coder-0.5b"):
        model_location(cfg)

