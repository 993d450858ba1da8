"""One version: the Python package carries the version of the Rust workspace (the server,
the Rust client and the C library are released together with it)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict

import rangelock
from conftest import REPO


def toml_section(path: Path, name: str) -> Dict[str, str]:
    """The ``key = "string"`` lines of section ``[name]`` of a TOML file (enough for the
    version fields; no TOML parser before Python 3.11)."""
    text = path.read_text()
    head = re.search(r"^\[%s\]\s*$" % re.escape(name), text, re.M)
    assert head is not None, f"{path}: no [{name}] section"
    body = re.split(r"^\[", text[head.end() :], maxsplit=1, flags=re.M)[0]
    return dict(re.findall(r'^([\w.-]+)\s*=\s*"([^"]*)"', body, re.M))


def workspace_version() -> str:
    return toml_section(REPO / "Cargo.toml", "workspace.package")["version"]


def test_the_package_version_is_the_workspace_version() -> None:
    version = workspace_version()
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), version
    pyproject = toml_section(REPO / "clients/python/pyproject.toml", "project")
    assert pyproject["version"] == version, "clients/python/pyproject.toml"
    assert rangelock.__version__ == version


def test_every_crate_has_the_workspace_version() -> None:
    version = workspace_version()
    manifests = sorted((REPO / "crates").glob("*/Cargo.toml"))
    assert manifests
    for m in manifests:
        package = m.read_text().split("[package]", 1)[1].split("\n[", 1)[0]
        assert re.search(r"^version\.workspace\s*=\s*true\s*$", package, re.M), f"{m}: version.workspace = true"
    # The workspace's own crates are pinned at exactly that version.
    text = (REPO / "Cargo.toml").read_text()
    deps = text.split("[workspace.dependencies]", 1)[1].split("\n[", 1)[0]
    pins = re.findall(r'^\S+ = \{ path = "crates/[^"]+", version = "=([^"]+)" \}', deps, re.M)
    assert pins and set(pins) == {version}, pins
