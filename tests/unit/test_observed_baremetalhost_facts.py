"""What a BareMetalHost shows besides its state, read into a book: its consumer,
spec.online, the detached annotation and baremetal-operator's own conditions, shown on
the HostState apart from hoststate's own, each change worth it told once."""

from __future__ import annotations

from typing import Any

from state_controller.api.baremetalhost import DETACHED
from state_controller.api.hoststate import BMH_CONDITION_MESSAGE_MAX, HostStateStatus
from state_controller.api.timefmt import rfc3339
from state_controller.books.book import Book
from state_controller.books.journal import Notice
from state_controller.books.projections import CONDITION_ORDER, hoststate_status
from state_controller.books.stuck import StuckPolicy
from state_controller.observed.baremetalhost import observe
from state_controller.observed.baremetalhost_facts import RESTATED, consumer_of
from state_controller.simulation.baremetal_operator import bmo_conditions
from testbed.clocks import T0
from tests.unit.test_observed_baremetalhost import KEY, bmh

BMO_STATES = (
    "",
    "unmanaged",
    "registering",
    "inspecting",
    "preparing",
    "available",
    "provisioning",
    "provisioned",
    "externally provisioned",
    "deprovisioning",
    "deleting",
)  # and powering off before delete, which the played operator does not play

M3M = {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "Metal3Machine"}


def shown(state: str, *, at: float = T0, **extra: Any) -> dict[str, Any]:
    """A BareMetalHost in ``state`` with BMO's conditions for it; ``consumer``,
    ``online``, ``detached``, ``healthy``, ``power_failure`` as BMO or its users set them."""
    obj = bmh(state)
    obj["status"]["conditions"] = bmo_conditions(
        state,
        healthy=extra.pop("healthy", ""),
        power_failure=extra.pop("power_failure", False),
        at=at,
    )
    if "consumer" in extra:
        obj["spec"]["consumerRef"] = {**M3M, "namespace": "metal", "name": extra.pop("consumer")}
    obj["spec"]["online"] = extra.pop("online", True)
    if "detached" in extra:
        obj["metadata"]["annotations"] = {DETACHED: extra.pop("detached")}
    assert not extra
    return obj


def notices(book: Book, since: int = 0) -> list[tuple[str, str, str]]:
    entries, _ = book.journal.since(since)
    return [(e.type, e.reason, e.message) for e in entries if isinstance(e, Notice)]


def status_of(book: Book, now: float) -> dict[str, Any]:
    out = hoststate_status(book, StuckPolicy(), now)
    HostStateStatus.model_validate(out)  # fits the HostState schema
    return out


def test_bmos_conditions_are_shown_as_written_apart_from_hoststates_own() -> None:
    book = Book(KEY, now=T0)
    observe(book, shown("provisioned", healthy="Healthy", at=T0 - 50), T0)
    status = status_of(book, T0)
    bmo = {c["type"]: c for c in status["bareMetalHost"]["conditions"]}
    assert list(bmo) == [
        "Manageable",
        "AvailableForProvisioning",
        "Provisioned",
        "Ready",
        "Progressing",
        "Healthy",
    ]
    assert bmo["Ready"] == {
        "type": "Ready",
        "status": "True",
        "reason": "Provisioned",
        "message": "",
        "lastTransitionTime": rfc3339(T0 - 50),  # BMO's time, not when it was seen
    }
    # hoststate's own condition set is unchanged but for what the BMC says of the
    # hardware (HardwareHealthy, from BMO's Healthy): BMO's are not mixed into it
    types = [c["type"] for c in status["conditions"]]
    assert types == [*CONDITION_ORDER, "HardwareHealthy"]
    assert status["bareMetalHost"]["online"] is True and "detached" not in status["bareMetalHost"]


def test_bmos_conditions_are_bounded_in_count_and_message() -> None:
    book = Book(KEY, now=T0)
    many = bmh("available")
    many["status"]["conditions"] = [
        {"type": f"Extra{i}", "status": "True", "reason": "Fine", "message": "x" * 5000,
         "lastTransitionTime": rfc3339(T0)}
        for i in range(32)
    ]  # fmt: skip
    observe(book, many, T0)
    kept = status_of(book, T0)["bareMetalHost"]["conditions"]
    assert len(kept) == 16
    assert len(kept[0]["message"]) == BMH_CONDITION_MESSAGE_MAX and kept[0]["message"][-1] == "…"


def test_a_condition_going_false_for_a_reason_of_its_own_is_told_and_its_end_too() -> None:
    book = Book(KEY, now=T0)
    observe(book, shown("provisioned", healthy="Healthy"), T0)
    start = book.journal.end
    observe(book, shown("provisioned", healthy="CriticalError", at=T0 + 10), T0 + 12)
    assert notices(book, start) == [
        (
            "Warning",
            "HealthyCriticalError",
            "baremetal-operator reports Healthy False (CriticalError)",
        )
    ]
    assert book.journal.since(start)[0][0].at == T0 + 10  # when BMO saw it change
    observe(book, shown("provisioned", healthy="Healthy", at=T0 + 20), T0 + 21)
    assert notices(book, start)[1][:2] == ("Normal", "HealthyRecovered")
    start = book.journal.end
    observe(book, shown("provisioned", healthy="Healthy", power_failure=True, at=T0 + 30), T0 + 30)
    assert [n[:2] for n in notices(book, start)] == [("Warning", "ManageablePowerFailure")]


def test_conditions_that_restate_the_state_are_not_told_twice() -> None:
    book = Book(KEY, now=T0)
    observe(book, shown("available"), T0)
    start, records = book.journal.end, book.last_seq
    observe(book, shown("provisioning", at=T0 + 5), T0 + 5)  # Ready, Progressing... change
    observe(book, shown("provisioned", at=T0 + 9), T0 + 9)
    assert notices(book, start) == []  # the transitions tell it
    assert book.last_seq == records + 2


def test_the_consumer_is_shown_and_a_claim_and_a_release_are_told() -> None:
    book = Book(KEY, now=T0)
    observe(book, shown("available"), T0)
    assert "consumer" not in status_of(book, T0)
    start = book.journal.end
    observe(book, shown("available", consumer="worker-0-abc"), T0 + 5)
    assert status_of(book, T0 + 5)["consumer"] == "Metal3Machine metal/worker-0-abc"
    observe(book, shown("available", consumer="worker-0-xyz"), T0 + 6)
    observe(book, shown("available"), T0 + 7)
    assert notices(book, start) == [
        ("Normal", "Claimed", "claimed by Metal3Machine metal/worker-0-abc (spec.consumerRef)"),
        (
            "Normal",
            "Claimed",
            "claimed by Metal3Machine metal/worker-0-xyz, no longer by Metal3Machine "
            "metal/worker-0-abc (spec.consumerRef)",
        ),
        ("Normal", "Released", "released by Metal3Machine metal/worker-0-xyz (spec.consumerRef)"),
    ]
    assert "consumer" not in status_of(book, T0 + 7)


def test_a_consumer_without_kind_or_namespace_is_named_as_far_as_known() -> None:
    assert consumer_of({"spec": {"consumerRef": {"name": "m0"}}}) == "m0"
    assert consumer_of({"spec": {"consumerRef": {"kind": "HostClaim", "name": "m0"}}}) == (
        "HostClaim m0"
    )
    assert consumer_of({"spec": {}}) == ""


def test_online_is_shown_and_a_change_told_as_a_request() -> None:
    book = Book(KEY, now=T0)
    observe(book, shown("provisioned"), T0)
    start, records = book.journal.end, book.last_seq
    observe(book, shown("provisioned", online=False), T0 + 5)
    assert status_of(book, T0 + 5)["bareMetalHost"]["online"] is False
    assert [n[:2] for n in notices(book, start)] == [("Normal", "PowerOffRequested")]
    assert book.last_seq == records  # a wish, not a change of state: the power tells that


def test_the_detached_annotation_is_shown_and_told() -> None:
    book = Book(KEY, now=T0)
    observe(book, shown("provisioned"), T0)
    start = book.journal.end
    observe(book, shown("provisioned", detached='{"deleteAction":"delay"}'), T0 + 5)
    assert status_of(book, T0 + 5)["bareMetalHost"]["detached"] == '{"deleteAction":"delay"}'
    observe(book, shown("provisioned"), T0 + 9)
    assert "detached" not in status_of(book, T0 + 9)["bareMetalHost"]
    told = notices(book, start)
    assert [n[:2] for n in told] == [("Normal", "DetachRequested"), ("Normal", "AttachRequested")]
    assert '({"deleteAction":"delay"})' in told[0][2]


def test_nothing_is_told_on_the_first_look_and_nothing_twice() -> None:
    book = Book(KEY, now=T0)
    first = shown("provisioned", consumer="m0", healthy="Warning", online=False, detached="")
    observe(book, first, T0)
    assert notices(book) == []
    status = status_of(book, T0)
    assert status["consumer"] == "Metal3Machine metal/m0"
    assert status["bareMetalHost"]["detached"] == ""
    end = book.journal.end
    observe(book, first, T0 + 60)
    assert book.journal.end == end


def test_a_condition_this_version_does_not_know_is_told_by_its_own_words() -> None:
    book = Book(KEY, now=T0)
    obj = shown("provisioned")
    observe(book, obj, T0)
    start = book.journal.end
    obj["status"]["conditions"].append(
        {"type": "example.com/Cooling", "status": "False", "reason": "FanFailed",
         "message": "fan 2 stopped", "lastTransitionTime": rfc3339(T0 + 3)}
    )  # fmt: skip
    observe(book, obj, T0 + 5)
    assert notices(book, start) == [
        (
            "Warning",
            "examplecomCoolingFanFailed",
            "baremetal-operator reports example.com/Cooling False (FanFailed): fan 2 stopped",
        )
    ]


def test_what_is_restated_is_what_bmo_sets_for_a_state_or_a_status() -> None:
    """RESTATED holds every reason baremetal-operator v0.13.2's computeConditions sets for
    a provisioning state or an operational status (the played operator plays it), and nothing it
    never sets: its declared NotManageableReason, seen False, is told."""
    statuses = ("OK", "error", "servicing", "detached")
    set_by_bmo = {
        c["reason"]
        for state in BMO_STATES
        for status in statuses
        for c in bmo_conditions(state, operational_status=status, at=T0)
        if c["type"] != "Healthy"
    }
    assert set_by_bmo | {"PoweringOffBeforeDelete"} == RESTATED
    book = Book(KEY, now=T0)
    observe(book, shown("available"), T0)
    start = book.journal.end
    other = shown("available", at=T0 + 5)
    for cond in other["status"]["conditions"]:
        if cond["type"] == "Manageable":
            cond.update(status="False", reason="NotManageableReason")
    observe(book, other, T0 + 5)
    assert [n[:2] for n in notices(book, start)] == [("Warning", "ManageableNotManageableReason")]


def test_the_bmcs_health_rollup_is_the_hardware_healthy_condition_a_series_and_a_hold() -> None:
    from state_controller.observability.inventory import InventoryCollector
    from state_controller.remediation.situation import blocked_by

    book = Book(KEY, now=T0)
    unhealthy = InventoryCollector(lambda: {KEY: book})

    def condition(now: float) -> dict[str, Any]:
        conditions = status_of(book, now)["conditions"]
        return next(c for c in conditions if c["type"] == "HardwareHealthy")

    def series() -> list[dict[str, str]]:
        samples = [s for family in unhealthy.collect() for s in family.samples]
        return [dict(s.labels) for s in samples if s.name == "hoststate_host_hardware_unhealthy"]

    observe(book, bmh("provisioned"), T0)  # no Healthy condition: nothing reports health
    assert "HardwareHealthy" not in [c["type"] for c in status_of(book, T0)["conditions"]]
    observe(book, shown("provisioned", healthy="Healthy"), T0 + 1)
    assert (condition(T0 + 1)["status"], condition(T0 + 1)["reason"]) == ("True", "Healthy")
    assert series() == [] and blocked_by(book, deleting=False) == ""
    observe(book, shown("provisioned", healthy="Warning", at=T0 + 10), T0 + 12)
    assert (condition(T0 + 12)["status"], condition(T0 + 12)["reason"]) == ("False", "Warning")
    assert series() == [{"namespace": "metal3", "host": "worker-0",
                         "health": "Warning", "source": "BareMetalHost"}]  # fmt: skip
    assert blocked_by(book, deleting=False) == ""  # degraded, not failed: may be power-cycled
    observe(book, shown("provisioned", healthy="CriticalError", at=T0 + 20), T0 + 22)
    critical = condition(T0 + 22)
    assert (critical["status"], critical["reason"]) == ("False", "CriticalError")
    assert critical["message"].startswith("the BMC's health rollup is Critical")
    assert [s["health"] for s in series()] == ["Critical"]
    assert blocked_by(book, deleting=False).startswith("failed, by its BMC's health rollup")
    observe(book, shown("provisioned", healthy="", at=T0 + 30), T0 + 32)  # BMC not answering
    assert condition(T0 + 32)["status"] == "Unknown" and series() == []
