"""Locate Node.js and install the live backend's npm package (`npm ci`) when node_modules is absent.

  python -m envs.minecraft.live.node_setup       # same as what the tests call
"""
import os
import shutil
import subprocess

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


def ensure_installed(timeout_s: float = 600.0) -> str:
  """Runs `npm ci` in the package folder when node_modules is missing; returns the node path."""
  node = node_binary()
  marker = os.path.join(PACKAGE_DIR, "node_modules", "flying-squid", "package.json")
  if os.path.exists(marker) and os.path.exists(
      os.path.join(PACKAGE_DIR, "node_modules", "mineflayer", "package.json")):
    return node
  npm = shutil.which("npm")
  if npm is None:
    raise NodeMissing("npm is not on PATH; install Node.js with npm, then run `npm ci` in "
                      f"{PACKAGE_DIR}")
  done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=PACKAGE_DIR,
                        capture_output=True, text=True, timeout=timeout_s)
  if done.returncode != 0:
    raise NodeMissing(f"`npm ci` failed in {PACKAGE_DIR}:\n{done.stderr[-2000:]}")
  return node


if __name__ == "__main__":
  print(ensure_installed())
