"""Locate Node.js and install the live backend's npm package (`npm ci`) when node_modules is absent.

  python -m envs.minecraft.live.node_setup       # same as what the tests call
"""
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile

from envs.minecraft.live.errors import NodeMissing

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
MIN_NODE_MAJOR = 18


def node_binary() -> str:
  node = shutil.which("node")
  if node is None:
    raise NodeMissing("node (Node.js >= 18) is not on PATH; the live Minecraft backend needs it")
  out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
  major = int(out.stdout.strip().lstrip("v").split(".")[0] or 0)
  if major < MIN_NODE_MAJOR:
    raise NodeMissing(f"Node.js {out.stdout.strip()} is too old; need >= {MIN_NODE_MAJOR}")
  return node


def dependencies() -> list:
  """The package's direct npm dependencies, as package.json names them."""
  with open(os.path.join(PACKAGE_DIR, "package.json")) as f:
    return sorted(json.load(f)["dependencies"])


def _installed() -> bool:
  # Every direct dependency, so a node_modules from before a new one was added is reinstalled.
  return all(os.path.exists(os.path.join(PACKAGE_DIR, "node_modules", name, "package.json"))
             for name in dependencies())


def ensure_installed(timeout_s: float = 600.0) -> str:
  """Runs `npm ci` in the package folder when node_modules is missing; returns the node path.

  A file lock keeps parallel test workers from running two installs into one folder."""
  node = node_binary()
  if _installed():
    return node
  lock_path = os.path.join(tempfile.gettempdir(), "accord-npm-ci-%s.lock" % hashlib.sha1(
      PACKAGE_DIR.encode()).hexdigest()[:12])
  with open(lock_path, "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    if not _installed():
      _npm_ci(timeout_s)
  return node


def _npm_ci(timeout_s: float) -> None:
  npm = shutil.which("npm")
  if npm is None:
    raise NodeMissing("npm is not on PATH; install Node.js with npm, then run `npm ci` in "
                      f"{PACKAGE_DIR}")
  done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=PACKAGE_DIR,
                        capture_output=True, text=True, timeout=timeout_s)
  if done.returncode != 0:
    raise NodeMissing(f"`npm ci` failed in {PACKAGE_DIR}:\n{done.stderr[-2000:]}")


if __name__ == "__main__":
  print(ensure_installed())
