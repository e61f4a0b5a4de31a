"""Self-Refine: the actor drafts a reply, then critiques and rewrites it before acting."""
from agents.conpact import prompts
from agents.conpact.react import ReActAgent


class SelfRefineAgent(ReActAgent):

  def decide(self, text: str):
    for _ in range(self.config.refine_rounds):
      history = [{"role": "assistant", "content": text},
                 {"role": "user", "content": prompts.refine_user(text)}]
      text = yield self.request(self.system(), self.user(), "actor_refine", history)
    return text
