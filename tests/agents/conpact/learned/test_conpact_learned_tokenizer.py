"""The study's BPE (agents/conpact/learned/tokenizer.py)."""
from agents.conpact import demonstrations as demo
from agents.conpact.learned import rows as study_rows
from agents.conpact.learned.tokenizer import train_conpact_tokenizer
from lib.models import tokenizer as tokenizer_lib


def test_round_trip_single_digit_tokens_and_shorter_prompts_than_gpt2_style(tmp_path):
  rows = demo.actor_rows("BabyAI-GoToRedBall-v0", [0, 1], 0.3, seed=0)
  texts = list(study_rows.corpus(rows))
  tok = train_conpact_tokenizer(texts, 1024, tmp_path / "ours")
  gpt2 = tokenizer_lib.train_tokenizer(texts, 1024, tmp_path / "gpt2")
  for t in texts[:6]:
    assert tok.decode(tok.encode(t, add_special_tokens=False)) == t
  pieces = [tok.decode([i]) for i in tok.encode('"target_forward": 13, ', add_special_tokens=False)]
  assert "1" in pieces and "3" in pieces   # digits stay one per token (copyable)
  ours = sum(len(tok.encode(t, add_special_tokens=False)) for t in texts)
  theirs = sum(len(gpt2.encode(t, add_special_tokens=False)) for t in texts)
  assert ours < 0.7 * theirs
