"""Shared fixtures: the repository's scenarios and the `satcc` binary that
`cargo build --release` (or `cargo test --release`) made."""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def root() -> pathlib.Path:
    return ROOT


@pytest.fixture(scope="session")
def quickstart() -> pathlib.Path:
    return ROOT / "scenarios" / "quickstart.toml"


@pytest.fixture(scope="session")
def cli() -> str:
    """The satcc command: $SATCC_BIN, else target/release/satcc (built by
    ./scripts/test before this stage). Missing is a failure, not a skip:
    the parity tests are the point."""
    exe = os.environ.get("SATCC_BIN") or str(ROOT / "target" / "release" / "satcc")
    if not os.path.exists(exe):
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "satcc-cli"], cwd=ROOT, check=True)
    return exe
