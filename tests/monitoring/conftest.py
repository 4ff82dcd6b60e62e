from __future__ import annotations

from pathlib import Path

import pytest

from testbed.prometheus import prometheus_root


@pytest.fixture(scope="session")
def prometheus() -> Path:
    """Debian's prometheus package, unpacked (cached after the first run)."""
    return prometheus_root()
