"""Every `python launch.py --config=...` command in the docs loads the way launch.py loads it.

The commands come from README.md, docs/*.md and configs/**/README.md: code-block lines (with
`\\` continuations joined) and inline backtick spans, after `python` or `python3`. Each is checked
by `launch.check_command_line` itself (config file, `:args`, `--config.x=y` overrides with their
types, the other flags, the experiment name) in one child process, so absl's global flags never
meet pytest's. Two parts of that check are left out on purpose: the workdir is replaced by a
temporary one, and configured input paths are not required to exist, since the docs name inputs
that an earlier command writes (`runs/wm_data/heldout.jsonl`) or placeholders
(`path/to/Qwen3.5-0.8B`).
"""
import glob
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Runs in the child: one verdict per argv (None = loads; otherwise launch.py's one-line error).
_CHECKER = r"""
import json, sys
from absl import flags
import launch
launch.check_input_paths = lambda config: None   # docs name inputs that earlier commands write
src, dst = sys.argv[1:3]
verdicts = []
for argv in json.load(open(src)):
  try:
    sys.argv = argv   # config_flags reads the --config.x overrides from sys.argv, as in launch.py
    for name in [n for n in flags.FLAGS if n.startswith("config.")]:
      delattr(flags.FLAGS, name)   # the previous command's override flags: one launch per process
    flags.FLAGS.unparse_flags()    # and its --workdir, --plan, ... values
    if launch.wants_help(argv):
      launch.help_text(argv)
    else:
      module, _, arg = launch.check_command_line(argv)
      if "--sweep" in argv or "--sweep_print" in argv:
        launch.sweep_points(module, arg)
    verdicts.append(None)
  except Exception as e:  # LaunchError, ConfigArgError, or whatever a config raises
    verdicts.append(f"{type(e).__name__}: {e}")
json.dump(verdicts, open(dst, "w"))
"""

_COMMAND = re.compile(r"\bpython3? launch\.py\s+--config[= ]")
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
_INLINE = re.compile(r"`([^`]+)`")
# Shell tokens that end a command: what follows is another command, or a redirection.
_SHELL_ENDS = {"&", "&&", "|", "||", ";", ">", ">>", "2>&1"}


def doc_files() -> list[str]:
  """README.md, docs/*.md and configs/**/README.md, relative to the repository root."""
  paths = ["README.md", *glob.glob("docs/*.md", root_dir=ROOT),
           *glob.glob("configs/**/README.md", root_dir=ROOT, recursive=True)]
  return sorted(p for p in paths if os.path.isfile(os.path.join(ROOT, p)))


def extract_commands(text: str) -> list[str]:
  """The `python[3] launch.py --config...` commands of a markdown text.

  Args:
    text: markdown.
  Returns:
    Each command from `python` to the end of its code line (continuations joined, a trailing
    `# comment` kept for shlex to drop) or of its backtick span, in order of appearance.
  """
  units = []
  for block in _FENCE.findall(text):
    units += block.replace("\\\n", " ").splitlines()
  prose = _FENCE.sub("", text)
  units += [span.replace("\n", " ") for span in _INLINE.findall(prose)]
  return [unit[m.start():].strip() for unit in units for m in [_COMMAND.search(unit)] if m]


def launch_argv(command: str, workdir: str) -> list[str]:
  """sys.argv of a doc command as launch.py sees it, with `--workdir` pointed at `workdir`.

  Args:
    command: `python launch.py ...` (shell syntax).
    workdir: replaces the command's `--workdir` value.
  Returns:
    ["launch.py", flags...].
  """
  tokens = shlex.split(command, comments=True)
  tokens = tokens[tokens.index("launch.py") + 1:]
  for i, token in enumerate(tokens):
    if token in _SHELL_ENDS:
      tokens = tokens[:i]
      break
  return ["launch.py"] + [f"--workdir={workdir}" if t.startswith("--workdir=") else t
                          for t in tokens]


def check_commands(commands: list[str], tmp_dir: str) -> list[str | None]:
  """launch.py's verdict on each command, from one child process.

  Args:
    commands: doc commands.
    tmp_dir: holds the argv/verdict files and the workdirs.
  Returns:
    None for a command that loads, else its error line.
  """
  argvs = [launch_argv(c, os.path.join(tmp_dir, f"wd{i}")) for i, c in enumerate(commands)]
  src, dst = os.path.join(tmp_dir, "argvs.json"), os.path.join(tmp_dir, "verdicts.json")
  with open(src, "w", encoding="utf-8") as f:
    json.dump(argvs, f)
  env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=ROOT)
  r = subprocess.run([sys.executable, "-c", _CHECKER, src, dst], cwd=ROOT, env=env,
                     capture_output=True, text=True, timeout=600)
  assert r.returncode == 0, r.stderr[-3000:]
  with open(dst, encoding="utf-8") as f:
    return json.load(f)


DOC_COMMANDS = [(path, command) for path in doc_files()
                for command in extract_commands(open(os.path.join(ROOT, path),
                                                     encoding="utf-8").read())]
# Commands the checker must refuse, each with a piece of the error it must give.
BAD_COMMANDS = [
    ("python launch.py --config=configs/no_such_config.py --workdir=runs/x", "does not exist"),
    ("python launch.py --config=configs/smoke.py:debugg=True --workdir=runs/x",
     "unknown config arg 'debugg'"),
    ("python launch.py --config=configs/smoke.py:tasks=many --workdir=runs/x", "expected int"),
    ("python launch.py --config=configs/smoke.py --workdir=runs/x --config.atempts=3",
     "unknown config field 'atempts'"),
    ("python launch.py --config=configs/smoke.py --workdir=runs/x --config.seed=abc", "seed"),
    ("python launch.py --config=configs/smoke.py", "missing --workdir"),
]


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
  commands = [c for _, c in DOC_COMMANDS] + [c for c, _ in BAD_COMMANDS]
  return dict(zip(commands, check_commands(commands, str(tmp_path_factory.mktemp("docs")))))


def test_docs_have_commands():
  files = {path for path, _ in DOC_COMMANDS}
  assert "README.md" in files and len(DOC_COMMANDS) >= 20, files


@pytest.mark.parametrize("path,command", DOC_COMMANDS,
                         ids=[f"{p}:{c.split()[2][9:60]}" for p, c in DOC_COMMANDS])
def test_doc_command_loads(verdicts, path, command):
  assert verdicts[command] is None, f"{path}: {command}\n  -> {verdicts[command]}"


@pytest.mark.parametrize("command,error", BAD_COMMANDS)
def test_checker_refuses_bad_command(verdicts, command, error):
  assert verdicts[command] is not None and error in verdicts[command], verdicts[command]


def test_extract_finds_blocks_spans_python3_and_continuations():
  text = ("Run `python3 launch.py --config=configs/a.py:x=1\n--workdir=runs/a` or\n"
          "```bash\nXLA_FLAGS=--f python launch.py --config=configs/b.py \\\n"
          "    --workdir=runs/b --plan   # memory\n"
          "python launch.py --config=configs/c.py --workdir=runs/c &\n"
          "tensorboard --logdir runs\n```\n")
  commands = extract_commands(text)
  assert commands == [
      "python launch.py --config=configs/b.py      --workdir=runs/b --plan   # memory",
      "python launch.py --config=configs/c.py --workdir=runs/c &",
      "python3 launch.py --config=configs/a.py:x=1 --workdir=runs/a"], commands
  assert launch_argv(commands[0], "W") == ["launch.py", "--config=configs/b.py", "--workdir=W",
                                           "--plan"]
  assert launch_argv(commands[1], "W") == ["launch.py", "--config=configs/c.py", "--workdir=W"]
