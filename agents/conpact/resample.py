"""Resampling: the actor is asked `samples` times (distinct sampling seeds per call, so replies can
differ at temperature > 0) and the most frequent parsed action wins; ties go to the earliest."""
import collections

from agents.conpact import parse
from agents.conpact.react import ReActAgent


class ResampleAgent(ReActAgent):

  def decide(self, text: str):
    replies = [text]
    for _ in range(self.config.samples - 1):
      replies.append((yield self.request(self.system(), self.user(), "actor_sample")))
    names = [parse.parse_action(r, self.task.action_names) for r in replies]
    votes = collections.Counter(n for n in names if n is not None)
    if not votes:
      return replies[0]
    best = max(votes.values())
    winner = next(n for n in names if n is not None and votes[n] == best)
    return replies[names.index(winner)]
