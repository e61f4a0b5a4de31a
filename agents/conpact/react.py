"""ReAct: one actor that reasons and acts from up to three recent frames (optionally asserting).

With `assertions=True` this is the single-role assertion prompt: the actor also reports the state
schema, recorded for correctness scoring (there is no second role to contradict it).
"""
from agents.conpact import prompts
from agents.conpact.base import GeneratorAgent


class ReActAgent(GeneratorAgent):

  def system(self) -> str:
    return prompts.actor_system(self.task, self.schema, self.config.assertions, with_planner=False)

  def user(self) -> str:
    return prompts.actor_user(self.frames[-self.config.actor_window:], None, self.extras("actor"))

  def episode(self):
    while True:
      text = yield self.request(self.system(), self.user(), "actor")
      text = yield from self.decide(text)
      if self.config.assertions:
        self.record("single", actor=self.assertion(text).to_json())
      name, _ = self.action(text)
      yield self.act(name)

  def decide(self, text: str):
    """Hook for Self-Refine / resampling: turn the first reply into the final one."""
    return text
    yield  # pylint: disable=unreachable  (makes this a generator)
