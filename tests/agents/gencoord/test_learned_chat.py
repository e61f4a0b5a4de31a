"""Chat rendering of local contexts and the DSL-aware tokenizer."""
import collections
import os
import re
import subprocess
import sys

import pytest

from agents.gencoord import data, episode as E, prompt, structure, suites
from agents.gencoord.learned import chat, tokenizer as dsl_tokenizer
from lib.models import tokenizer as tokenizer_lib


@pytest.fixture(scope="module")
def rows():
  return data.forward_rows(suites.forward("heldout")[:8])


@pytest.fixture(scope="module")
def tok(rows, tmp_path_factory):
  texts = [chat.system_prompt() + "\n" + r.prompt + "\n" + r.target for r in rows]
  return dsl_tokenizer.train_dsl_tokenizer(texts, 600, tmp_path_factory.mktemp("tok"))


def test_messages_hold_prior_and_local_context(rows):
  snd, rcv = rows[0], rows[1]
  m = chat.messages(snd.context)
  assert [x["role"] for x in m] == ["system", "user"]
  for skill in ("resource.obtain(", "craft.item(", "build.component("):
    assert skill in m[0]["content"]
  canon = lambda t: sorted(t.replace(": ", "=", 1) for t in t.split("\n"))  # noqa: E731
  assert canon(m[1]["content"]) == canon(prompt.render(snd.context))
  assert f"peer={snd.context.peer}" in m[1]["content"]
  assert m[1]["content"].split("\n")[-1].startswith("task: ")
  assert snd.binding in m[1]["content"]                      # sender sees its private binding
  rcv_user = chat.messages(rcv.context)[1]["content"]
  assert "active_binding" not in rcv_user and "incoming: REQ" in rcv_user
  # The structure view changes the rendered prior, nothing else does.
  ep = suites.visibility("node_only")[0]
  full = chat.messages(E.sender_context(suites.visibility("full")[0]))[1]["content"]
  node = chat.messages(E.sender_context(ep))[1]["content"]
  assert full != node and "<-" in full and "<-" not in node


def test_structure_is_bound_to_each_agents_names():
  ep = suites.forward("heldout")[0]
  snd_ctx = E.sender_context(ep)
  rcv_ctx = E.receiver_context(ep, "REQ x")
  line = lambda ctx: next(x for x in prompt.render(ctx).split("\n")  # noqa: E731
                          if x.startswith("structure: "))
  # Sender and receiver see one structure: the same agents in the same roles.
  assert line(snd_ctx) == line(rcv_ctx)
  bound = line(snd_ctx)
  assert f"{ep.sender}:" in bound and f"to={ep.receiver}" in bound
  assert " snd:" not in bound and " rcv:" not in bound
  # Unbinding the names gives back the abstract public structure exactly.
  abstract = structure.render(ep.template, ep.view)
  unbound = bound.replace(ep.sender, "snd").replace(ep.receiver, "rcv")
  assert unbound == "structure: " + abstract and " snd:" in abstract
  # Swapping who sends swaps the names and nothing else.
  swapped = E.sender_context(suites.forward("heldout")[1])
  assert suites.forward("heldout")[1].cluster_id == ep.cluster_id
  assert line(swapped) == bound.replace(ep.sender, "@").replace(ep.receiver, ep.sender).replace(
      "@", ep.receiver)


def test_multi_line_history_stays_together():
  ep = suites.capability_suite()[0]
  ctx = E.requester_context(ep, "SELF a()\nREQ agent_b b()", '{"decision":"ACCEPT"}')
  user = chat.user_message(ctx)
  assert "history[0]: SELF a()\nREQ agent_b b()\nincoming:" in user


def test_chat_template_and_surface_notes(tok, rows):
  text = chat.prompt_text(tok, rows[0].context)
  assert text.startswith("<|im_start|>system\n") and text.endswith("<|im_start|>assistant\n")
  assert "<|im_start|>user\n" + chat.user_message(rows[0].context) + "<|im_end|>" in text
  assert chat.system_prompt("json") != chat.system_prompt("dsl")
  with pytest.raises(ValueError):
    chat.system_prompt("morse")


def test_tokenizer_round_trip_and_shorter_dsl(tok, rows, tmp_path):
  for r in rows:
    for s in (r.prompt, r.target, "unseen text ünïcode (x=1,y=2) {}"):
      assert tok.decode(tok.encode(s, add_special_tokens=False)) == s
  # Independent peer: lib.models.tokenizer's GPT-2-regex BPE trained on the same texts.
  texts = [chat.system_prompt() + "\n" + r.prompt + "\n" + r.target for r in rows]
  gpt2 = tokenizer_lib.train_tokenizer(texts, 600, tmp_path / "gpt2")
  ours = sum(len(tok.encode(r.target)) for r in rows)
  theirs = sum(len(gpt2.encode(r.target)) for r in rows)
  assert ours * 2 < theirs
  again = tokenizer_lib.load_tokenizer(tok.name_or_path)
  assert again.encode(rows[0].target) == tok.encode(rows[0].target)
  assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
  with pytest.raises(ValueError):
    dsl_tokenizer.train_dsl_tokenizer(texts, 100, tmp_path / "small")


def test_numbers_tokenize_digit_by_digit(tok, rows):
  # The tokenizer was trained on multi-digit counts, so BPE could have merged them.
  assert any(re.search(r"\d\d", r.prompt + r.target) for r in rows)
  for text in ("resource.obtain(q=16,item=oak_planks)", '{"goal_count":3,"oak_planks":12}',
               "I hold 24 sand.", rows[0].target):
    pieces = [tok.decode([i]) for i in tok.encode(text, add_special_tokens=False)]
    with_digits = [p for p in pieces if any(ch.isdigit() for ch in p)]
    assert all(len(p) == 1 for p in with_digits), with_digits     # one token per digit
    assert "".join(with_digits) == "".join(ch for ch in text if ch.isdigit())


def test_whole_number_tokens_keep_a_frequent_number_in_one_token(tmp_path):
  # The quickstart's rows and vocabulary size: every count they use 100+ times is one token.
  train = data.forward_rows(suites.forward("train"))
  texts = [chat.system_prompt() + "\n" + r.prompt + "\n" + r.target for r in train]
  whole = dsl_tokenizer.train_dsl_tokenizer(texts, 1024, tmp_path / "whole", numbers="whole")
  counts = collections.Counter(n for t in texts for n in re.findall(r"\d+", t))
  frequent = [n for n, c in counts.items() if c >= 100]
  assert sum(len(n) == 2 for n in frequent) >= 5
  for n in frequent:
    assert whole.tokenize(f"q={n},")[1] == n                   # the number is one token
  for r in train[:50]:                                        # still an exact byte round trip
    assert whole.decode(whole.encode(r.prompt, add_special_tokens=False)) == r.prompt
  rare = "q=98765,"                                           # no merge learned: several tokens
  assert len(whole.tokenize(rare)) > 3
  assert whole.decode(whole.encode(rare, add_special_tokens=False)) == rare
  with pytest.raises(ValueError, match="numbers"):
    dsl_tokenizer.train_dsl_tokenizer(texts, 1024, tmp_path / "bad", numbers="bytes")


def test_an_item_is_one_token_wherever_it_occurs(tok):
  # The obtain quantity is need - holding of the item the path names: the model must match the
  # structure's item to the inventory's, which it can only do if they share a token.
  texts = ('"inventory":{"oak_planks":6,"sand":3}', "resource.obtain(q=4,item=oak_planks) >",
           "resource.deliver(q=8,item=oak_planks,to=agent_b)", "I hold 6 oak_planks.")
  item = tok.encode("oak_planks", add_special_tokens=False)
  assert len(item) == 1
  for text in texts:
    assert item[0] in tok.encode(text, add_special_tokens=False), text


def test_own_messages_keep_only_the_agents_own_sections(rows):
  """The short-context drill prompt: no system prompt, no prior or structure; the observation
  and what follows it are the full prompt's own lines, in the same order, at its end."""
  for r in rows[:4]:
    full = chat.messages(r.context)[1]["content"]
    own = chat.own_messages(r.context)
    assert [m["role"] for m in own] == ["user"]
    text = own[0]["content"]
    assert "structure:" not in text and "prior:" not in text and "observation:" in text
    assert full.endswith(text) and len(text) < len(full) / 2


def test_the_pre_tokenizer_pattern_does_not_depend_on_the_hash_seed():
  # `recipes.ITEMS` is a set: its order follows PYTHONHASHSEED; the saved tokenizer must not
  # (runs compare tokenizer files byte for byte: agents/gencoord/learned/reuse.py).
  code = "from agents.gencoord.learned import tokenizer as t; print(t.SPLIT)"
  out = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                        env={**os.environ, "PYTHONHASHSEED": seed}).stdout
         for seed in ("1", "2", "3", "4")}
  assert len(out) == 1 and out.pop().strip() == dsl_tokenizer.SPLIT
