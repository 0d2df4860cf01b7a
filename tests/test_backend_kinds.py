"""``llm.backend`` names one kind in one table; each kind builds its backend and names its cache
identity, so no second list of backend names exists to fall out of step."""

from __future__ import annotations

import pytest

from clag.errors import UserFacingError
from clag.llm.models import BACKENDS, BackendKind, FactoryKind, backend_kind, build_client, model_id_for
from clag.registry import UnknownNameError
from tests.scripted_llm import ScriptedBackend

OPENAI = {"name": "m", "backend": "openai", "model": "served-model"}


class EchoKind(BackendKind):
    """A user's own kind: known identity, batches by itself."""

    def build(self, cfg):
        return ScriptedBackend(lambda request: "echo", model_id=self.model_id(cfg))

    def model_id(self, cfg):
        return f"echo:{cfg['name']}"

    def batches_by_itself(self, cfg):
        return True


def echo_factory(cfg):
    return ScriptedBackend(lambda request: "echo", model_id="echo-factory")


def test_the_table_names_every_builtin_backend_once():
    assert BACKENDS.names() == ["hf", "llamacpp", "openai"]
    assert all(isinstance(BACKENDS.get(name), BackendKind) for name in BACKENDS.names())


def test_an_unknown_backend_answers_with_the_valid_names():
    with pytest.raises(UnknownNameError, match="openai"):
        backend_kind({"backend": "opneai"})


def test_identity_and_batching_come_from_the_kind_not_from_an_if_chain():
    assert model_id_for(OPENAI).startswith("openai:served-model")
    assert BACKENDS.get("openai").batches_by_itself(OPENAI)
    assert not BACKENDS.get("hf").batches_by_itself({"backend": "hf"})
    served = {"backend": "llamacpp", "server": "auto"}
    assert BACKENDS.get("llamacpp").batches_by_itself(served)
    assert not BACKENDS.get("llamacpp").batches_by_itself({**served, "server": None})


def test_a_users_kind_or_factory_is_named_by_its_import_path():
    kind = backend_kind({"backend": f"{__name__}:EchoKind"})
    assert isinstance(kind, EchoKind)
    assert model_id_for({"backend": f"{__name__}:EchoKind", "name": "x"}) == "echo:x"
    factory = backend_kind({"backend": f"{__name__}:echo_factory"})
    assert isinstance(factory, FactoryKind) and factory.model_id({}) is None


def test_a_kind_that_batches_by_itself_gets_no_micro_batcher():
    cfg = {"backend": f"{__name__}:EchoKind", "name": "x", "cache_path": None}
    client = build_client(cfg, run_seed=0, micro_batch={"max_batch": 4, "max_wait_ms": 1})
    assert type(client.backend).__name__ == "LazyBackend"
    factory_client = build_client({**cfg, "backend": f"{__name__}:echo_factory"}, run_seed=0,
                                  micro_batch={"max_batch": 4, "max_wait_ms": 1})
    assert type(factory_client.backend).__name__ == "MicroBatcher"


def test_a_backend_path_that_does_not_import_is_one_line():
    with pytest.raises(UserFacingError, match="cannot import"):
        backend_kind({"backend": "no_such_module_xyz:build"})
