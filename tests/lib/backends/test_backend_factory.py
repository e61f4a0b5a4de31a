"""Backend construction from config, and the vLLM adapter's lazy import / translation logic."""
import sys
import types

import numpy as np
import pytest

from envs.toy.guess_env import BisectPolicy
from lib.backends import factory, vllm_backend
from lib.backends.openai_http import OpenAIBackend
from lib.backends.protocol import BackendUnavailable, SamplingParams
from lib.backends.scripted import NoiseModel, ScriptedBackend
from lib.run import config_blocks


def test_backend_config_rejects_typos_and_unknown_kinds():
  with pytest.raises(KeyError, match="timeout_s"):
    config_blocks.backend_config("openai_http", timout_s=3)
  with pytest.raises(KeyError, match="valid: flax, openai_http, scripted, vllm"):
    factory.make_backend({"kind": "tpu_magic"})
  with pytest.raises(KeyError, match="max_batch"):
    factory.make_backend({"kind": "flax", "max_btach": 3})


def test_openai_and_scripted_from_config(monkeypatch):
  monkeypatch.setenv("ACCORD_FACTORY_KEY", "sk-zzz")
  cfg = config_blocks.backend_config("openai_http", base_url="http://127.0.0.1:9/v1", model="m",
                                     api_key_env="ACCORD_FACTORY_KEY", max_retries=1)
  b = factory.make_backend(cfg)
  assert isinstance(b, OpenAIBackend) and b.max_retries == 1 and b.model == "m"
  assert "sk-zzz" not in repr(b) and "sk-zzz" not in str(cfg)
  with pytest.raises(ValueError, match="policy"):
    factory.make_backend({"kind": "scripted"})
  s = factory.make_backend({"kind": "scripted", "seed": 5},
                           policy=BisectPolicy(NoiseModel({"guess": 0.0})))
  assert isinstance(s, ScriptedBackend) and s.seed == 5


def test_vllm_missing_is_a_clear_error(monkeypatch):
  monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` raise ImportError
  with pytest.raises(BackendUnavailable, match="needs the `vllm` package"):
    factory.make_backend({"kind": "vllm", "model": "some/dir"})


class _FakeLLM:
  """Stands in for vllm.LLM: records what the adapter sends, answers deterministically."""
  calls = []

  def __init__(self, model, seed, **kw):
    self.model, self.kw = model, kw

  def chat(self, conversations, sampling_params, use_tqdm):
    _FakeLLM.calls.append((conversations, sampling_params))
    out = []
    for conv, p in zip(conversations, sampling_params):
      text = conv[-1]["content"].upper()[:p["max_tokens"]]
      completion = types.SimpleNamespace(text=text, token_ids=list(range(len(text))),
                                         finish_reason="length")
      out.append(types.SimpleNamespace(prompt_token_ids=[0] * 7, outputs=[completion]))
    return out

  def embed(self, texts, use_tqdm):
    return [types.SimpleNamespace(outputs=types.SimpleNamespace(embedding=[3.0, 4.0]))
            for _ in texts]


def test_vllm_adapter_translates_requests(monkeypatch):
  fake = types.SimpleNamespace(LLM=_FakeLLM, SamplingParams=lambda **kw: kw)
  monkeypatch.setattr(vllm_backend, "_import_vllm", lambda: fake)
  monkeypatch.setattr(vllm_backend, "_has_gpu", lambda: False)
  with pytest.raises(BackendUnavailable, match="GPU"):
    vllm_backend.VLLMBackend("dir")
  monkeypatch.setattr(vllm_backend, "_has_gpu", lambda: True)
  b = factory.make_backend({"kind": "vllm", "model": "dir", "embed": True})
  assert b.llm.kw["runner"] == "pooling" and b.llm.kw["max_model_len"] == 8192
  convs = [[{"role": "user", "content": "abc"}], [{"role": "user", "content": "hello"}]]
  out = b.generate(convs, [SamplingParams(max_tokens=2, seed=1, stop=("x",)),
                           SamplingParams(max_tokens=9, top_k=5)])
  sent = _FakeLLM.calls[-1][1]
  assert sent[0]["seed"] == 1 and sent[0]["stop"] == ["x"] and sent[0]["top_k"] == -1
  assert sent[1]["top_k"] == 5 and sent[1]["stop"] is None
  assert [c.text for c in out] == ["AB", "HELLO"]
  assert [(c.input_tokens, c.output_tokens) for c in out] == [(7, 2), (7, 5)]
  np.testing.assert_allclose(b.embed(["q"]), [[0.6, 0.8]])


def test_sectioned_config_switches_kind():
  cfg = config_blocks.backends_config("flax", openai_http=dict(base_url="http://127.0.0.1:7/v1"))
  assert cfg["flax"]["model"]["preset"] == "qwen3-tiny" and cfg["vllm"]["max_model_len"] == 8192
  cfg["kind"] = "openai_http"
  b = factory.make_backend(cfg)
  assert isinstance(b, OpenAIBackend) and b.base_url == "http://127.0.0.1:7/v1"
  with pytest.raises(KeyError, match="outside the per-kind sections"):
    factory.make_backend({**cfg, "timeout_s": 3})
  with pytest.raises(KeyError, match="unknown backend kinds"):
    config_blocks.backends_config("flax", flaxx={})


def test_flax_config_takes_one_model_block(tmp_path):
  cfg = config_blocks.backend_config("flax", model=dict(checkpoint=str(tmp_path / "missing")))
  assert cfg["model"]["preset"] == "qwen3-tiny" and cfg["model"]["dtype"] == "float32"
  with pytest.raises(KeyError, match="model block has no fields"):
    config_blocks.backend_config("flax", model=dict(chekpoint="x"))
  with pytest.raises(FileNotFoundError, match="is not a local Hugging Face directory"):
    factory.make_backend(cfg)
