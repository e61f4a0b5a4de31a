"""`python launch.py ...` for tests, without paying Python + JAX + torch imports per command line.

A server process (this file run as a script) imports launch.py's modules once, without starting
a JAX backend, then forks one child per request; the child runs launch.py as `__main__` with the
request's argv and environment, its stdout and stderr written to files. So each command line is
still its own process (own flags, own backend, real exit status, nothing shared with the next
one), started in ~0.1 s instead of ~5 s. Used by tests/test_launch.py and
tests/lib/plan/test_memory_plan.py.

  server = LaunchServer(env)            # env: the server's environment (JAX_PLATFORMS, ...)
  r = server.run("--config=...", "--workdir=...", env=extra_env)   # r.returncode/.stdout/.stderr
  server.close()

  r = launch_optimised("--config=...", "--workdir=...")   # one process, XLA's default -O level
"""
import ast
import atexit
import importlib
import json
import os
import runpy
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCH = os.path.join(ROOT, "launch.py")


O0_FLAG = "--xla_backend_optimization_level=0"


def launch_optimised(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
  """`python launch.py *args` in its own process, compiled at XLA's default optimisation level.

  tests/conftest.py compiles the suite at -O0, which pays off for the many small compile-bound
  tests but not for the long compute-bound study runs: the WM and ConPAct debug studies measured
  182 vs 219 and 145 vs 202 CPU-s at the default level vs -O0 (2 quiet cores). The run still
  shares the suite's compilation cache (JAX_COMPILATION_CACHE_DIR is inherited)."""
  flags = os.environ.get("XLA_FLAGS", "").replace(O0_FLAG, "").strip()
  env = dict(os.environ, XLA_FLAGS=flags, PYTHONPATH=ROOT)
  env.setdefault("JAX_PLATFORMS", "cpu")
  return subprocess.run([sys.executable, LAUNCH, *args], cwd=ROOT, env=env, capture_output=True,
                        text=True, timeout=timeout)


class LaunchServer:
  """One server process; `run` sends it a command line and returns the child's result."""

  def __init__(self, env: dict | None = None):
    env = dict(os.environ if env is None else env, PYTHONPATH=ROOT)
    env.setdefault("JAX_PLATFORMS", "cpu")
    self._proc = subprocess.Popen([sys.executable, os.path.abspath(__file__)], cwd=ROOT, env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    ready = self._proc.stdout.readline()
    if ready.strip() != "ready":
      raise RuntimeError(f"launch server did not start: {ready!r}")

  def run(self, *args: str, env: dict | None = None, timeout: float = 300):
    """-> an object with returncode, stdout, stderr of `python launch.py *args` (env: extra
    variables for this command)."""
    self._proc.stdin.write(json.dumps({"args": list(args), "env": env or {},
                                       "timeout": timeout}) + "\n")
    self._proc.stdin.flush()
    reply = self._proc.stdout.readline()
    if not reply:
      raise RuntimeError(f"launch server exited with {self._proc.wait()}")
    return types.SimpleNamespace(**json.loads(reply))

  def close(self):
    self._proc.stdin.close()
    self._proc.wait(timeout=30)


def _preload():
  """Imports every module launch.py imports at its top level (not launch itself: its flags must
  be defined once, in the child). JAX's backend must not start here: forking after it has is
  unsafe."""
  with open(LAUNCH, encoding="utf-8") as f:
    tree = ast.parse(f.read())
  for node in tree.body:
    if isinstance(node, ast.Import):
      for alias in node.names:
        importlib.import_module(alias.name)
    elif isinstance(node, ast.ImportFrom) and node.module:
      module = importlib.import_module(node.module)
      for alias in node.names:          # `from lib.run import tb`: tb is a module, import it too
        if not hasattr(module, alias.name):
          importlib.import_module(f"{node.module}.{alias.name}")
  # after the imports above, so JAX is configured as launch.py's modules leave it
  from jax._src import xla_bridge  # noqa: E402
  assert not xla_bridge._backends, "a JAX backend started while importing launch.py's modules"


def _child(args: list[str], env: dict, out_path: str, err_path: str) -> None:
  """Forked child: stdout/stderr to files, launch.py run as __main__, exit with its status."""
  code = 1
  try:
    null = os.open(os.devnull, os.O_RDONLY)   # stdin: not the server's request pipe
    os.dup2(null, 0)
    os.close(null)
    for fd, path in ((1, out_path), (2, err_path)):
      target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
      os.dup2(target, fd)
      os.close(target)
    os.environ.update(env)
    sys.argv = [LAUNCH, *args]
    runpy.run_path(LAUNCH, run_name="__main__")
    code = 0
  except SystemExit as e:
    code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    if not isinstance(e.code, (int, type(None))):
      print(e.code, file=sys.stderr)
  except BaseException:  # noqa: BLE001  (as the interpreter would: traceback, status 1)
    traceback.print_exc()
  finally:
    atexit._run_exitfuncs()   # as interpreter exit does (logging, TensorBoard, Orbax flushes)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _serve() -> None:
  _preload()
  reply = sys.stdout
  reply.write("ready\n")
  reply.flush()
  for line in sys.stdin:
    request = json.loads(line)
    # mkdtemp, not TemporaryDirectory: the child runs exit handlers, and a finalizer the
    # server registered would delete the directory under it
    tmp = tempfile.mkdtemp(prefix="launch_server_")
    try:
      out_path, err_path = os.path.join(tmp, "out"), os.path.join(tmp, "err")
      sys.stdout.flush()
      sys.stderr.flush()
      pid = os.fork()
      if pid == 0:
        _child(request["args"], request["env"], out_path, err_path)
      deadline = time.time() + request["timeout"]
      while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
          returncode = os.waitstatus_to_exitcode(status)
          break
        if time.time() > deadline:
          os.kill(pid, signal.SIGKILL)
          os.waitpid(pid, 0)
          returncode = -signal.SIGKILL
          break
        time.sleep(0.02)
      result = {"returncode": returncode}
      for key, path in (("stdout", out_path), ("stderr", err_path)):
        with open(path, encoding="utf-8", errors="replace") as f:
          result[key] = f.read()
    finally:
      shutil.rmtree(tmp, ignore_errors=True)
    reply.write(json.dumps(result) + "\n")
    reply.flush()


if __name__ == "__main__":
  os.chdir(ROOT)
  sys.path.insert(0, ROOT)
  _serve()
