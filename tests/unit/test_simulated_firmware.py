"""The simulated firmware's servicing runs: when each step ends."""

from __future__ import annotations

from state_controller.api.servicing import ServiceStep
from state_controller.provisioning.simulated_firmware import ServiceRun


def test_a_simulated_servicing_step_ends_at_its_time_on_a_clock_read_anywhere() -> None:
    """Two readings 0.3 s apart near a monotonic clock's value differ by a hair less than
    0.3 in floats; the step due at 0.3 s has still ended (a held clock moved by exactly
    its time polled it for ever)."""
    started = 1686.043660185
    steps = (ServiceStep.APPLYING_SETTINGS, ServiceStep.UPDATING_FIRMWARE)
    run = ServiceRun("digest", started, ("a", "b"), steps, 0.3, 0.2, None)
    assert (started + 0.3) - started < 0.3  # the hair
    done, step, _ = run.progress(started + 0.3)
    assert (done, step) == (1, ServiceStep.UPDATING_FIRMWARE)
    assert [s for _, s, _ in run.passed(started + 0.3)] == list(steps)
    assert run.progress(started + 0.29)[:2] == (0, ServiceStep.APPLYING_SETTINGS)
