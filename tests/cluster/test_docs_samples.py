"""The docs' pivot and ``kubectl get`` samples are what a real run prints now: the
bootstrap of docs/samples/hosts.yaml, pivoted into a bare control plane of its own, taken
over by that cluster's controller, then read by the real kubectl (testbed.samples).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from testbed import samples

pytestmark = pytest.mark.slow


def test_pivot_and_kubectl_samples_match_a_real_run(tmp_path: Path) -> None:
    shutil.copy(samples.SAMPLES / samples.HOSTS_FILE, tmp_path / samples.HOSTS_FILE)
    samples.run(samples.BOOTSTRAP, tmp_path)
    fresh = samples.slow_samples(tmp_path)
    assert set(fresh) == {one.name for one in samples.SLOW}
    stale = {}
    for name, text in fresh.items():
        problems = samples.differences((samples.SAMPLES / f"{name}.txt").read_text(), text)
        if problems:
            stale[name] = problems
    assert not stale, f"run scripts/docs-samples; differences: {stale}"
    for one in samples.KUBECTL:  # kubectl's default columns fit a terminal of 120
        if "wide" not in one.name:
            assert max(len(line) for line in fresh[one.name].splitlines()) <= 120, one.name
