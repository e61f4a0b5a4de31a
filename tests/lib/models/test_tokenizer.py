"""Offline byte-level BPE training, Hugging Face format on disk, chat template rendering."""
import json
import os
import subprocess
import sys
import tempfile

import pytest
import transformers
from hypothesis import given, settings, strategies as st

from lib.models import tokenizer

CORPUS = [f"Step {i}: the agent moves {d} toward the {o}; reward {i % 3}." for i in range(60)
          for d, o in (("north", "door"), ("west", "key"), ("east", "goal"))]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
  path = tmp_path_factory.mktemp("bpe")
  return tokenizer.train_tokenizer(CORPUS, 300, path), path


def test_saved_in_hf_format_and_loadable_by_transformers(trained):
  tok, path = trained
  assert (path / "tokenizer.json").exists() and (path / "tokenizer_config.json").exists()
  auto = transformers.AutoTokenizer.from_pretrained(str(path))
  assert auto.is_fast and tok.is_fast
  text = "Step 7: the agent moves north toward the door; reward 1."
  assert auto.encode(text, add_special_tokens=False) == tok.encode(text, add_special_tokens=False)
  assert len(tok) <= 300
  # Training merged frequent words: far fewer tokens than bytes.
  assert len(tok.encode(text, add_special_tokens=False)) < len(text.encode()) / 2


def test_special_tokens_are_single_ids(trained):
  tok, _ = trained
  vocab = tok.get_vocab()
  assert [vocab[t] for t in tokenizer.SPECIAL_TOKENS] == [0, 1, 2]
  assert tok.eos_token == tokenizer.IM_END and tok.pad_token == tokenizer.PAD
  assert tok.encode("<|im_start|>user<|im_end|>", add_special_tokens=False)[0] == 1
  assert tok.padding_side == "left"


def test_chat_template_renders_chatml(trained):
  tok, path = trained
  messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Go?"}]
  text = tokenizer.render_chat(tok, messages)
  assert text == ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nGo?<|im_end|>\n"
                  "<|im_start|>assistant\n")
  auto = transformers.AutoTokenizer.from_pretrained(str(path))
  assert auto.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) == text
  no_prompt = tokenizer.render_chat(tok, messages, add_generation_prompt=False)
  assert not no_prompt.endswith("assistant\n")


_CACHE = {}


def _cached_tokenizer():
  # hypothesis does not mix with function-scoped fixtures; train once per process instead.
  if "tok" not in _CACHE:
    _CACHE["dir"] = tempfile.TemporaryDirectory()
    _CACHE["tok"] = tokenizer.train_tokenizer(CORPUS, 300, _CACHE["dir"].name)
  return _CACHE["tok"]


@settings(max_examples=40, deadline=None)
@given(st.text(max_size=40))
def test_any_string_round_trips(text):
  tok = _cached_tokenizer()
  ids = tok.encode(text, add_special_tokens=False)
  assert tok.decode(ids) == text
  assert all(0 <= i < len(tok) for i in ids)


def test_bad_inputs_raise(tmp_path):
  with pytest.raises(ValueError, match="vocab_size"):
    tokenizer.train_tokenizer(CORPUS, 100, tmp_path / "small")
  with pytest.raises(FileNotFoundError, match="tokenizer.json"):
    tokenizer.load_tokenizer(tmp_path)
  (tmp_path / "tokenizer_config.json").write_text(json.dumps({}))
  with pytest.raises(FileNotFoundError):
    tokenizer.load_tokenizer(tmp_path)


def test_render_chat_without_template_is_a_clear_error(trained):
  tok, _ = trained
  tok_copy = transformers.PreTrainedTokenizerFast(tokenizer_object=tok.backend_tokenizer)
  with pytest.raises(ValueError, match="no chat template"):
    tokenizer.render_chat(tok_copy, [{"role": "user", "content": "x"}])


def test_saved_config_names_a_class_both_transformers_majors_load(trained):
  _, path = trained
  config = json.loads((path / "tokenizer_config.json").read_text())
  # transformers 5 writes "TokenizersBackend", which 4.x (setup.py allows >= 4.56) cannot resolve.
  assert config["tokenizer_class"] == tokenizer.PORTABLE_TOKENIZER_CLASS
  assert tokenizer.PORTABLE_TOKENIZER_CLASS == "PreTrainedTokenizerFast"
  assert "backend" not in config and hasattr(transformers, config["tokenizer_class"])


TRANSFORMERS4_CHECK = """
import sys, transformers
assert transformers.__version__.startswith("4."), transformers.__version__
tok = transformers.AutoTokenizer.from_pretrained(sys.argv[1], local_files_only=True)
chat = tok.apply_chat_template([{"role": "user", "content": "Go?"}], tokenize=False,
                               add_generation_prompt=True)
print(chat + "|" + str(tok.encode("Step 7", add_special_tokens=False)))
"""


# transformers 4.x beside the venv's 5.x: the README's test command installs it (--no-deps --target)
# into .venv/transformers4; ACCORD_TRANSFORMERS4_SITE points elsewhere.
TRANSFORMERS4_SITE = os.environ.get("ACCORD_TRANSFORMERS4_SITE") or os.path.join(
    os.path.dirname(__file__), "..", "..", "..", ".venv", "transformers4")


@pytest.mark.skipif(not os.path.isdir(TRANSFORMERS4_SITE),
                    reason="no transformers 4.x site: run the README's test command, or set "
                           "ACCORD_TRANSFORMERS4_SITE to a `pip install --no-deps --target` of "
                           "transformers 4.56 + tokenizers 0.22 + huggingface_hub 0.35")
def test_saved_tokenizer_loads_in_transformers_4(trained):
  tok, path = trained
  out = subprocess.run([sys.executable, "-c", TRANSFORMERS4_CHECK, str(path)], check=True,
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": TRANSFORMERS4_SITE})
  expected = tokenizer.render_chat(tok, [{"role": "user", "content": "Go?"}])
  assert out.stdout.strip() == expected + "|" + str(tok.encode("Step 7", add_special_tokens=False))
