"""Timestamps survive a write and a read back unchanged (else a restart rewrites status)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from state_controller.api.timefmt import parse_rfc3339, rfc3339, rfc3339_ms

instants = st.floats(min_value=0, max_value=4_000_000_000, allow_nan=False)


@given(instants)
def test_millisecond_form_round_trips(ts: float) -> None:
    text = rfc3339_ms(ts)
    back = parse_rfc3339(text)
    assert back is not None and rfc3339_ms(back) == text


@given(instants)
def test_second_form_agrees_with_the_millisecond_form(ts: float) -> None:
    back = parse_rfc3339(rfc3339_ms(ts))
    assert back is not None and rfc3339(back) == rfc3339(ts)


def test_just_before_a_second_boundary() -> None:
    ts = 1_800_000_033.9996
    assert rfc3339_ms(ts).endswith("34.000Z")
    assert rfc3339(ts).endswith(":34Z")  # the same second as its millisecond form
