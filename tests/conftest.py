"""Shared fixtures.  ``../shared`` (beside the project root) holds read-only peer data; tests that
need it skip with a reason when it is absent."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = REPO_ROOT.parent / "shared"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def peer_bag() -> Path:
    """robot_localization's own test1.bag (ROS 1), read-only."""
    path = SHARED_DIR / "peer" / "test1.bag"
    if not path.is_file():
        pytest.skip(f"peer bag {path} is absent (it lives in ../shared/peer beside the project)")
    return path


@pytest.fixture(scope="session")
def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        exe = shutil.which(name)
        if exe:
            return exe
    pytest.skip("headless Chromium is not installed (Debian package 'chromium')")
