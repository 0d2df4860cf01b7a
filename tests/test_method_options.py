"""One options convention: every method's YAML keys are the fields of its options dataclass, the
shipped values are its defaults, and a bad value fails when the options are built."""

from __future__ import annotations

import dataclasses
import importlib

import numpy as np
import pytest
from omegaconf import OmegaConf

from clag.clustered import CLAGOptions, ClusterView
from clag.clusters import Cluster
from clag.index import VectorIndex
from clag.notes import MemoryNote
from clag.router import route_cosine
from tests.conftest import REPO

METHODS = REPO / "configs" / "method"


def method_files() -> dict[str, dict]:
    return {path.stem: OmegaConf.to_container(OmegaConf.load(path)) for path in sorted(METHODS.glob("*.yaml"))}


def memory_keys(name: str, files: dict[str, dict]) -> tuple[str, dict]:
    """(``_target_``, the memory keys) of a method file, its ``defaults`` parents' first."""
    cfg = files[name]
    target, keys = None, {}
    for parent in cfg.get("defaults", []):
        if parent != "_self_":
            target, inherited = memory_keys(parent, files)
            keys.update(inherited)
    own = dict(cfg.get("memory") or {})
    target = own.pop("_target_", target)
    keys.update(own)
    return target, keys


def options_class_of(target: str) -> type:
    module, _, name = target.rpartition(".")
    return getattr(importlib.import_module(module), name).options_class


@pytest.mark.parametrize("name", sorted(method_files()))
def test_every_yaml_key_is_a_field_of_the_methods_frozen_options(name):
    target, keys = memory_keys(name, method_files())
    options = options_class_of(target)
    assert dataclasses.is_dataclass(options) and options.__dataclass_params__.frozen
    assert set(keys) <= {f.name for f in dataclasses.fields(options)}, set(keys) - {
        f.name for f in dataclasses.fields(options)}


@pytest.mark.parametrize("name", [n for n, cfg in method_files().items() if "defaults" not in cfg])
def test_a_base_method_files_values_are_its_options_defaults(name):
    """The dataclass says the defaults; the file repeats them so each run's config records them.
    Values the file takes from the run's profile (``${...}``) are the profile's to set."""
    target, keys = memory_keys(name, method_files())
    literal = {k: v for k, v in keys.items() if not (isinstance(v, str) and v.startswith("${"))}
    options = options_class_of(target)
    assert options(**literal) == options(), {k: v for k, v in literal.items() if getattr(options(), k) != v}


def test_bad_options_fail_when_built():
    with pytest.raises(ValueError, match="router must be one of"):
        CLAGOptions(router="spectral")
    with pytest.raises(ValueError, match="invalid_route"):
        CLAGOptions(invalid_route="retry")
    with pytest.raises(TypeError, match="routing_topk"):
        CLAGOptions(routing_topk=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        CLAGOptions().retrieve_k = 5  # type: ignore[misc]


def test_the_router_needs_only_a_view_and_its_options():
    """No memory object: two clusters, a note's vector, the routing options."""
    east, north = np.array([1.0, 0.0], dtype=np.float32), np.array([0.0, 1.0], dtype=np.float32)
    clusters = {"a": Cluster("a", [0], ["x"], "east", east), "b": Cluster("b", [1], ["y"], "north", north)}
    view = ClusterView(clusters, ["first note", "second note"], VectorIndex(2, "cosine"))
    note = MemoryNote("third note", "", ("t2",))
    decision = route_cosine(view, note, np.array([0.9, 0.1], dtype=np.float32), CLAGOptions().routing)
    assert (decision.note, decision.chosen, decision.reason, decision.candidates) == (2, "a", "routed", ["a", "b"])
    strict = dataclasses.replace(CLAGOptions(), sim_threshold=0.999).routing
    assert route_cosine(view, note, np.array([0.9, 0.1], dtype=np.float32), strict).chosen is None
