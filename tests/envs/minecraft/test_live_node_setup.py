"""Node/npm discovery for the live backend: clear errors instead of a hang or a stack trace."""
import os
import stat

import pytest

from envs.minecraft.live import node_setup
from envs.minecraft.live.errors import NodeMissing


def _fake_node(tmp_path, version):
  path = tmp_path / "node"
  path.write_text(f"#!/bin/sh\necho {version}\n")
  path.chmod(path.stat().st_mode | stat.S_IEXEC)
  return str(path)


def test_missing_node_is_a_clear_error(monkeypatch):
  monkeypatch.setattr(node_setup.shutil, "which", lambda name: None)
  with pytest.raises(NodeMissing, match="node"):
    node_setup.ensure_installed()


def test_old_node_is_refused(monkeypatch, tmp_path):
  node = _fake_node(tmp_path, "v16.20.0")
  monkeypatch.setattr(node_setup.shutil, "which", lambda name: node if name == "node" else None)
  with pytest.raises(NodeMissing, match="too old"):
    node_setup.node_binary()


def test_missing_npm_with_missing_node_modules_is_a_clear_error(monkeypatch, tmp_path):
  node = _fake_node(tmp_path, "v20.1.0")
  monkeypatch.setattr(node_setup.shutil, "which", lambda name: node if name == "node" else None)
  with open(os.path.join(node_setup.PACKAGE_DIR, "package.json")) as f:
    manifest = f.read()
  names = node_setup.dependencies()
  assert {"flying-squid", "mineflayer", "mineflayer-pathfinder", "minecraft-data"} <= set(names)
  monkeypatch.setattr(node_setup, "PACKAGE_DIR", str(tmp_path / "pkg"))
  os.makedirs(tmp_path / "pkg")
  (tmp_path / "pkg" / "package.json").write_text(manifest)
  with pytest.raises(NodeMissing, match="npm is not on PATH"):
    node_setup.ensure_installed()
  # One dependency short (a node_modules from before it was added) still needs npm ...
  for name in names[:-1]:
    os.makedirs(tmp_path / "pkg" / "node_modules" / name)
    (tmp_path / "pkg" / "node_modules" / name / "package.json").write_text("{}")
  with pytest.raises(NodeMissing, match="npm is not on PATH"):
    node_setup.ensure_installed()
  # ... and with every package present, no npm is needed at all.
  os.makedirs(tmp_path / "pkg" / "node_modules" / names[-1])
  (tmp_path / "pkg" / "node_modules" / names[-1] / "package.json").write_text("{}")
  assert node_setup.ensure_installed() == node
