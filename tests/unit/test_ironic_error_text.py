"""Ironic's error text is read in bounded time, however long and however written: a
``last_error`` quotes what a BMC, an image server or a tenant's URL sent back."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from state_controller.provisioning.ironic import faults

CHECKSUM_URL = "http://images.example/os.qcow2.sha256sum"
# each made the pattern it names try every start and scan to the end of the line from each
ADVERSARIAL = {
    "checksum.*(mismatch|…)": "checksum " * 6_700,
    "image href (\\S+) failed.*(404|…)": "image href x failed " * 3_000,
}


class Spy:
    """A compiled pattern that notes the length of every text it searches."""

    def __init__(self, pattern: re.Pattern[str], seen: list[int]) -> None:
        self.pattern, self.seen = pattern, seen

    def search(self, text: str) -> re.Match[str] | None:
        self.seen.append(len(text))
        return self.pattern.search(text)


def test_no_pattern_sees_more_than_the_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    spied = tuple((Spy(pattern, seen), text) for pattern, text in faults._REASONS)
    monkeypatch.setattr(faults, "_REASONS", spied)
    checksum_trouble = faults._checksum_file_trouble

    def checked(last_error: str, checksum_url: str) -> Any:
        seen.append(len(last_error))
        return checksum_trouble(last_error, checksum_url)

    monkeypatch.setattr(faults, "_checksum_file_trouble", checked)
    for text in ADVERSARIAL.values():
        assert len(text) >= 60_000
        faults.readable(text, checksum_url=CHECKSUM_URL)
    assert seen and max(seen) <= faults.READ_MAX <= 8192


@pytest.mark.parametrize("text", list(ADVERSARIAL.values()), ids=list(ADVERSARIAL))
def test_60_kb_of_adversarial_text_is_read_at_once(text: str) -> None:
    """Each took 1-6 s before; now a few ms. The bound is a hundred times that: no load
    on a shared machine comes near it, a quadratic pattern does."""
    spent = min(_timed(text) for _ in range(3))
    assert spent < 0.5, f"{spent:.2f}s"


@pytest.mark.parametrize("text", list(ADVERSARIAL.values()), ids=list(ADVERSARIAL))
def test_each_pattern_is_linear_in_the_text(text: str) -> None:
    """Without the cut too: eight times the text costs about eight times the time, where
    a quadratic pattern costs sixty-four (7.5 KB and 60 KB of the same text). The bound,
    three times linear, stays far from both: a busy machine that slows some of the timings
    cannot pass a quadratic pattern nor fail a linear one, as the two are timed in turn
    (each pair under the same load) and the least of fifteen of each is kept."""
    for pattern, _ in faults._REASONS:
        pairs = [
            (_searched(pattern, text[:7_500]), _searched(pattern, text[:60_000])) for _ in range(15)
        ]
        small = min(a for a, _ in pairs)
        large = min(b for _, b in pairs)
        assert large < 24 * small + 0.005, (pattern.pattern, small, large)


def test_a_reason_within_the_cut_is_still_found() -> None:
    long = "Failed to prepare to deploy: image checksum did not match. " + "x " * 40_000
    assert faults.readable(long) == "the image's checksum did not match spec.image.checksum"
    # an unknown text is never quoted, however long (it may be what a remote server said)
    assert faults.readable("SSH-2.0-OpenSSH_9.2p1 Debian. " * 5_000) == faults.NOT_SHOWN


def _timed(text: str) -> float:
    started = time.perf_counter()
    faults.readable(text, checksum_url=CHECKSUM_URL)
    return time.perf_counter() - started


def _searched(pattern: re.Pattern[str], text: str) -> float:
    started = time.perf_counter()
    pattern.search(text)
    return time.perf_counter() - started
