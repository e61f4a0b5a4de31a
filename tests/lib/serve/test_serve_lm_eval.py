"""lm-evaluation-harness against the server (tiny random Flax model, in process, 127.0.0.1, tasks
from local JSONL files, nothing downloaded). It tokenizes through the server's /tokenizer_info,
/tokenize and /detokenize, scores choices with echo + logprobs (`local-completions`) and
generates through /v1/completions and /v1/chat/completions. Each reported accuracy must equal the
one computed here from our own scoring (`FlaxBackend.score`) on the same items."""
import json
import os

import lm_eval
import numpy as np
import pytest
from lm_eval.tasks import TaskManager

from lib.backends.flax_backend import FlaxBackend
from lib.serve import OpenAIServer, ServerLimits

MAX_GEN = 6


@pytest.fixture(scope="module")
def served(tmp_path_factory):
  os.environ["HF_DATASETS_OFFLINE"] = os.environ["HF_HUB_OFFLINE"] = "1"
  backend = FlaxBackend.tiny(tmp_path_factory.mktemp("tiny"), min_batch=4, max_batch=8)
  limits = ServerLimits(max_new_tokens=16, max_prompt_tokens=200, max_batch=8)
  server = OpenAIServer(backend, "accord", limits=limits, chunk_size=4).start()
  yield server, backend, tmp_path_factory.mktemp("tasks")
  server.shutdown()


def _task(folder, name, rows, body):
  data = folder / f"{name}.jsonl"
  data.write_text("".join(json.dumps(r) + "\n" for r in rows))
  (folder / f"{name}.yaml").write_text(
      f"task: {name}\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {data}\n"
      f"test_split: test\n{body}")


def _evaluate(server, folder, task, model, **kw):
  url = f"{server.url}/{'chat/completions' if model == 'local-chat-completions' else 'completions'}"
  args = f"base_url={url},model=accord,num_concurrent=1,max_retries=1," + \
      ("tokenized_requests=False" if model == "local-chat-completions" else
       "tokenized_requests=True,batch_size=4")
  out = lm_eval.simple_evaluate(model=model, model_args=args, tasks=[task],
                                task_manager=TaskManager(include_path=str(folder)), **kw)
  return out["results"][task]


def _greedy(backend, ids, until):
  """Greedy continuation by repeated full teacher-forced forwards (no sampler, no KV cache):
  the prediction after the last token is read at an appended placeholder position."""
  tok, out = backend.tokenizer, []
  for _ in range(MAX_GEN):
    (s,) = backend.score([ids + out + [0]], top_logprobs=1)
    nxt = s["top_ids"][-1][0]
    if nxt == tok.eos_token_id:
      break
    out.append(nxt)
    text = tok.decode(out)
    if any(u in text for u in until):
      return text[:min(text.index(u) for u in until if u in text)]
  return tok.decode(out)


def test_multiple_choice_accuracy_equals_our_scoring(served):
  server, backend, folder = served
  rows = [{"question": f"Which number comes after {i}?",
           "choices": [str(i + 1), str(i + 3), "red", "a blue box"], "answer": i % 4}
          for i in range(12)]
  _task(folder, "accord_mc", rows, 'output_type: multiple_choice\ndoc_to_text: "{{question}}"\n'
        'doc_to_choice: "{{choices}}"\ndoc_to_target: "{{answer}}"\n'
        "metric_list:\n  - metric: acc\n    aggregation: mean\n    higher_is_better: true\n")
  reported = _evaluate(server, folder, "accord_mc", "local-completions")["acc,none"]
  enc = lambda t: backend.tokenizer.encode(t, add_special_tokens=False)
  correct = []
  for r in rows:  # lm-eval's pair: context, then " " + choice, split where the context ends
    whole = [enc(r["question"] + " " + c) for c in r["choices"]]
    ctx = len(enc(r["question"]))
    loglik = [sum(s["logprobs"][ctx:]) for s in backend.score(whole)]
    correct.append(int(np.argmax(loglik)) == r["answer"])
  assert reported == pytest.approx(np.mean(correct), abs=1e-12)
  assert 0 < np.mean(correct) < 1  # the items separate right from wrong: a real comparison


@pytest.mark.parametrize("model", ["local-completions", "local-chat-completions"])
def test_generate_until_exact_match_equals_our_greedy(served, model):
  server, backend, folder = served
  prompts = [f"Count from {i}:" for i in range(8)]
  chat = model == "local-chat-completions"
  tok = backend.tokenizer

  def ids(p):
    if chat:
      p = tok.apply_chat_template([{"role": "user", "content": p}], tokenize=False,
                                  add_generation_prompt=True, **backend.template_kwargs)
    return tok.encode(p, add_special_tokens=False)

  own = [_greedy(backend, ids(p), ["\n"]) for p in prompts]
  # Half the targets are our own greedy answers, half cannot be produced: exact match 0.5.
  rows = [{"prompt": p, "target": o if i % 2 == 0 else "\u2603 never"}
          for i, (p, o) in enumerate(zip(prompts, own))]
  name = f"accord_gen_{'chat' if chat else 'text'}"
  _task(folder, name, rows, 'output_type: generate_until\ndoc_to_text: "{{prompt}}"\n'
        'doc_to_target: "{{target}}"\ntarget_delimiter: ""\n'
        f'generation_kwargs:\n  until: ["\\n"]\n  max_gen_toks: {MAX_GEN}\n  do_sample: false\n'
        "metric_list:\n  - metric: exact_match\n    aggregation: mean\n"
        "    higher_is_better: true\n")
  reported = _evaluate(server, folder, name, model, apply_chat_template=chat)
  assert reported["exact_match,none"] == pytest.approx(0.5, abs=1e-12), (own, reported)
