"""The tests' one way to wait names what the last try raised when time runs out."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import wait_for


def test_a_key_error_is_named_when_the_wait_times_out() -> None:
    status: dict[str, Any] = {"status": {"phase": "Provisioned"}}
    with pytest.raises(AssertionError, match=r"the last try raised KeyError: 'stauts'"):
        wait_for(lambda: status["stauts"]["phase"], timeout=0.1, what="a typo")


def test_a_false_last_try_names_no_old_error() -> None:
    tries = iter([KeyError("early"), False, False, False])

    def predicate() -> bool:
        value = next(tries, False)
        if isinstance(value, Exception):
            raise value
        return value

    with pytest.raises(AssertionError) as caught:
        wait_for(predicate, timeout=0.1, what="nothing")
    assert "raised" not in str(caught.value)
