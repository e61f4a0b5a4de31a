"""A folder written by `models.save_pretrained(..., tokenizer=tok)` serves as it is: the tiny
model and its trained BPE exported together, loaded through `model.checkpoint=<folder>`, answer a
chat completion over HTTP exactly as the model in memory does."""
import os

import openai
import pytest

from lib import models
from lib.backends.flax_backend import FlaxBackend
from lib.backends.protocol import SamplingParams
from lib.models import model_setup
from lib.run import config_blocks
from lib.serve import OpenAIServer, ServerLimits

MSG = [{"role": "user", "content": "Range [0, 7]. Reply with one integer."}]


def test_a_save_pretrained_folder_serves_as_it_is(tmp_path):
  model, config, tok = model_setup.build_model(
      config_blocks.model_block(), seed=0, tokenizer_texts=model_setup.TINY_CORPUS,
      tokenizer_dir=str(tmp_path / "tok"))
  export = tmp_path / "export"
  models.save_pretrained(model, config, export, tokenizer=tok)
  assert {"config.json", "model.safetensors", "tokenizer.json"} <= set(os.listdir(export))
  served = FlaxBackend.from_block(config_blocks.model_block(checkpoint=str(export)))
  server = OpenAIServer(served, "accord", limits=ServerLimits(max_new_tokens=8)).start()
  try:
    client = openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0, timeout=120)
    r = client.chat.completions.create(model="accord", messages=MSG, max_tokens=5, temperature=0)
  finally:
    server.shutdown()
  (local,) = FlaxBackend(model, tok).generate([MSG], SamplingParams(max_tokens=5, temperature=0))
  assert r.choices[0].message.content == local.text
  assert r.usage.prompt_tokens == local.input_tokens


def test_a_weights_only_folder_is_refused_naming_the_missing_tokenizer(tmp_path):
  model, config, _ = model_setup.build_model(config_blocks.model_block(), seed=0)
  models.save_pretrained(model, config, tmp_path)
  with pytest.raises(FileNotFoundError, match="has no tokenizer.json"):
    FlaxBackend.from_block(config_blocks.model_block(checkpoint=str(tmp_path)))
