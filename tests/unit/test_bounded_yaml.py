"""A tenant's network or meta data costs the controller a bounded amount, whatever it holds.

Each text here once crashed or starved the controller on every reconcile of its Host: an
alias bomb (440 bytes expanded to 195 MB in the digest), a value that contains itself or
holds a date (JSON cannot write either: the digest raised), nesting deeper than Python
recurses. Each is now refused with a sentence naming the field, and nothing raises.
"""

from __future__ import annotations

import base64
import tracemalloc
from typing import Any

import pytest

from state_controller.api.host import HostSpec
from state_controller.provisioning.provisioner import HostData
from state_controller.runtime.hosts import bounded_yaml
from state_controller.runtime.hosts import data as host_data
from state_controller.runtime.hosts.data import read_host_data
from testbed.alias_bomb import alias_bomb


def _read(text: str) -> tuple[HostData | None, str | None]:
    secret = {
        "metadata": {"labels": {"hoststate.io/host-data": "true"}, "resourceVersion": "1"},
        "data": {"networkData": base64.b64encode(text.encode()).decode()},
    }
    spec = HostSpec.model_validate(
        {
            "bmc": {"address": "ipmi://192.0.2.1", "credentialsName": "bmc"},
            "networkData": {"name": "nd"},
        }
    )
    read = read_host_data(spec, "team-a", lambda key: secret)
    return read.data, read.problem


def test_an_alias_bomb_is_refused_in_bounded_memory() -> None:
    bomb = alias_bomb(9)  # 9**9 strings once written out
    assert len(bomb) < 450
    tracemalloc.start()
    try:
        data, problem = _read(bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    if data is not None:  # its repr takes the digest, which is what never ends
        pytest.fail("the bomb was read as data")
    assert problem == (
        'spec.networkData: the networkData in Secret "team-a/nd" stands for more than 256 KiB '
        "written out (each use of a YAML alias counts in full); write it out in full, within "
        "those bounds"
    )
    assert peak < 1024 * 1024, f"reading 440 bytes held {peak} bytes at its peak"


def test_aliases_within_the_bound_are_read_and_written_out() -> None:
    data, problem = _read(alias_bomb(3))  # 729 strings: 2.9 KiB written out
    assert problem is None and data is not None
    assert len(data.network_data["c"]) == 9 and data.network_data["c"][8][8] == ["x"] * 9  # type: ignore[index]
    assert data.sizes()["network_data"] > 2900 and len(data.digest()) == 64


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("&a [*a]", bounded_yaml.CONTAINS_ITSELF),
        ("a: &a {b: [1, *a]}", bounded_yaml.CONTAINS_ITSELF),
        ("a: !!binary aGVsbG8=", bounded_yaml.NOT_JSON),
        ("a: !!set {x}", bounded_yaml.NOT_JSON),
        ("a: {b: {1: x}}", bounded_yaml.NOT_JSON),  # sorting str and int keys raised
        ("a: " + "[" * 65 + "]" * 65, bounded_yaml.TOO_DEEP),
        ("a: " + "[" * 5000 + "]" * 5000, bounded_yaml.NOT_YAML),
        ("k: " + "x" * bounded_yaml.TEXT_MAX, bounded_yaml.TOO_LONG),
        # used first near the top, then again far deeper than it was met
        (
            "a: &a " + "[" * 40 + "]" * 40 + "\nb: " + "[" * 40 + "*a" + "]" * 40,
            bounded_yaml.TOO_DEEP,
        ),
    ],
    ids=[
        "self",
        "self-deep",
        "binary",
        "set",
        "int-key",
        "deep",
        "deeper-than-libyaml",
        "long",
        "reused-deeper",
    ],
)
def test_what_json_cannot_write_is_refused_not_raised(text: str, problem: str) -> None:
    data, told = _read(text)
    assert data is None and told is not None
    assert told.startswith('spec.networkData: the networkData in Secret "team-a/nd" ' + problem)
    assert text[:20] not in told  # the text is never quoted


def test_a_date_stays_the_text_written_and_the_digest_can_be_taken() -> None:
    data, problem = _read("d: 2001-12-14\nmac: 52:54:00:00:00:01\nn: 0x10\n")
    assert problem is None and data is not None
    assert data.network_data == {"d": "2001-12-14", "mac": "52:54:00:00:00:01", "n": 16}
    assert len(data.digest()) == 64  # a date object made json.dumps raise here


def test_a_value_at_the_bounds_is_read() -> None:
    deep = "a: " + "[" * 63 + "]" * 63  # 64 deep with the mapping
    assert _read(deep)[1] is None
    long_list = "[" + ",".join(['"' + "x" * 1000 + '"'] * 60) + "]"  # ~60 KiB, as JSON
    assert bounded_yaml.load(long_list).problem is None


def test_the_parse_cache_is_bounded_by_what_it_keeps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host_data._Parsed, "BYTES", 64 * 1024)
    parsed = host_data._Parsed()
    value: dict[str, Any] = {}
    for n in range(40):  # each ~10 KiB written out: only six fit
        value, problem = parsed.parse(f"n: {n}\nk: {'x' * 10_000}\n", "metaData", "ns", "md")
        assert problem is None
    assert value is not None and value["n"] == 39
    assert len(parsed._results) == 6 and parsed._bytes <= 64 * 1024
