"""The Host's summary conditions (Manageable, AvailableForProvisioning, Provisioned, Ready,
Progressing, BMCAccessible): a pure projection of the book, through a host's life."""

from __future__ import annotations

from typing import Any

import pytest

from state_controller.api import crds
from state_controller.api.base import MESSAGE_MAX
from state_controller.api.states import ErrorType, OperationalStatus
from state_controller.api.states import ProvisioningState as S
from state_controller.api.timefmt import rfc3339
from state_controller.books.book import Book
from state_controller.books.host_conditions import HOST_CONDITION_ORDER
from state_controller.books.projections import host_conditions, host_status, host_status_differs
from state_controller.books.restore import restore
from state_controller.cluster.schema import prune
from testbed.clocks import T0

TYPES = [t.value for t in HOST_CONDITION_ORDER]


def shown(book: Book) -> dict[str, tuple[str, str]]:
    """Each condition's (status, reason), by type."""
    return {c["type"]: (c["status"], c["reason"]) for c in host_conditions(book)}


def registered(book: Book, at: float) -> None:
    book.move(S.REGISTERING, now=at, reason="Registering")
    book.note(now=at + 1, provider_id="node-1", credentials=("bmc-secret", "7"))


def test_a_new_host_is_registering() -> None:
    book = Book("ns/h", now=T0)
    assert [c["type"] for c in host_conditions(book)] == TYPES
    assert shown(book) == {
        "Manageable": ("False", "Registering"),
        "AvailableForProvisioning": ("False", "NotAvailable"),
        "Provisioned": ("False", "NotProvisioned"),
        "Ready": ("False", "NotProvisioned"),
        "Progressing": ("True", "Registering"),
        "BMCAccessible": ("Unknown", "Registering"),
    }


def test_a_host_without_a_bmc_is_not_managed() -> None:
    book = Book("ns/h", now=T0)
    book.move(S.UNMANAGED, now=T0 + 1, reason="NoBMC")
    got = shown(book)
    assert got["Manageable"] == ("False", "NotManaged")
    assert got["BMCAccessible"] == ("False", "NoBMC")
    assert got["Progressing"] == ("False", "NotProgressing")


def test_inspecting_then_available() -> None:
    book = Book("ns/h", now=T0)
    registered(book, T0 + 1)
    book.move(S.INSPECTING, now=T0 + 3, reason="Registered")
    got = shown(book)
    assert got["Manageable"] == ("True", "Manageable")
    assert got["AvailableForProvisioning"] == ("False", "NotAvailable")
    assert got["Progressing"] == ("True", "Inspecting")
    assert got["BMCAccessible"] == ("True", "Accessible")
    book.move(S.PREPARING, now=T0 + 5, reason="Inspected")
    assert shown(book)["AvailableForProvisioning"] == ("False", "NotAvailable")
    assert shown(book)["Progressing"] == ("True", "Preparing")
    book.move(S.AVAILABLE, now=T0 + 7, reason="Prepared")
    assert shown(book) == {
        "Manageable": ("True", "Manageable"),
        "AvailableForProvisioning": ("True", "Available"),
        "Provisioned": ("False", "NotProvisioned"),
        "Ready": ("False", "NotProvisioned"),
        "Progressing": ("False", "NotProgressing"),
        "BMCAccessible": ("True", "Accessible"),
    }


def available(at: float) -> Book:
    book = Book("ns/h", now=at)
    registered(book, at + 1)
    book.move(S.INSPECTING, now=at + 3, reason="Registered")
    book.move(S.PREPARING, now=at + 5, reason="Inspected")
    book.move(S.AVAILABLE, now=at + 7, reason="Prepared")
    return book


def test_provisioning_then_provisioned_then_deprovisioning() -> None:
    book = available(T0)
    book.move(S.PROVISIONING, now=T0 + 10, reason="ImageSet")
    got = shown(book)
    assert got["Provisioned"] == ("False", "NotProvisioned")
    assert got["AvailableForProvisioning"] == ("False", "NotAvailable")
    assert got["Progressing"] == ("True", "Provisioning")
    book.move(S.PROVISIONED, now=T0 + 20, reason="Deployed")
    assert shown(book) == {
        "Manageable": ("True", "Manageable"),
        "AvailableForProvisioning": ("False", "NotAvailable"),
        "Provisioned": ("True", "Provisioned"),
        "Ready": ("True", "Provisioned"),
        "Progressing": ("False", "NotProgressing"),
        "BMCAccessible": ("True", "Accessible"),
    }
    book.fail(ErrorType.PROVISIONING, "wiping failed", now=T0 + 25, reason="Failed")
    assert shown(book)["Provisioned"] == ("True", "Provisioned")  # deprovisioning refused
    book.move(S.DEPROVISIONING, now=T0 + 30, reason="ImageRemoved")
    book.fail(ErrorType.PROVISIONING, "wiping failed", now=T0 + 32, reason="Failed")
    assert shown(book)["Provisioned"] == ("False", "NotProvisioned")
    book.recover(now=T0 + 35, reason="Retried")
    got = shown(book)
    assert got["Provisioned"] == ("False", "NotProvisioned")
    assert got["Ready"] == ("False", "NotProvisioned")
    assert got["Progressing"] == ("True", "Deprovisioning")
    book.move(S.AVAILABLE, now=T0 + 40, reason="Deprovisioned")
    assert shown(book)["AvailableForProvisioning"] == ("True", "Available")


@pytest.mark.parametrize("where", [S.AVAILABLE, S.PROVISIONING])
def test_a_failed_provisioning_is_not_provisioned_and_says_why(where: S) -> None:
    """A deploy the backend refused leaves the host available; one that failed on the
    way leaves it provisioning: either way Provisioned says it failed, and why."""
    book = available(T0)
    if where == S.PROVISIONING:
        book.move(S.PROVISIONING, now=T0 + 10, reason="ImageSet")
    book.fail(ErrorType.PROVISIONING, "checksum mismatch", now=T0 + 12, reason="Failed")
    conds = {c["type"]: c for c in host_conditions(book)}
    assert conds["Provisioned"]["status"] == "False"
    assert conds["Provisioned"]["reason"] == "ProvisioningFailed"
    assert conds["Provisioned"]["message"] == "checksum mismatch"
    assert (conds["Ready"]["status"], conds["Ready"]["reason"]) == ("False", "Error")
    assert (conds["Progressing"]["status"], conds["Progressing"]["reason"]) == ("False", "Error")
    assert conds["Manageable"]["status"] == "True"  # the BMC is fine; the image is not


def test_bmc_credentials_error() -> None:
    book = Book("ns/h", now=T0)
    book.move(S.REGISTERING, now=T0 + 1, reason="Registering")
    message = "the BMC at 192.0.2.10 rejected user 'admin'; check username and password"
    book.fail(ErrorType.REGISTRATION, message, now=T0 + 2, reason="RegistrationFailed")
    conds = {c["type"]: c for c in host_conditions(book)}
    assert (conds["Manageable"]["status"], conds["Manageable"]["reason"]) == (
        "False",
        "RegistrationFailed",
    )
    assert conds["Manageable"]["message"] == message
    assert (conds["BMCAccessible"]["status"], conds["BMCAccessible"]["reason"]) == (
        "False",
        "RegistrationFailed",
    )
    assert conds["BMCAccessible"]["message"] == message
    assert conds["AvailableForProvisioning"]["reason"] == "NotAvailable"
    assert conds["AvailableForProvisioning"]["message"] == message
    book.note(now=T0 + 5, credentials=("bmc-secret", "8"))
    book.recover(now=T0 + 5, reason="Registered", message="the BMC accepted the credentials")
    assert shown(book)["BMCAccessible"] == ("True", "Accessible")


def test_a_provisioned_host_whose_bmc_stops_answering() -> None:
    book = available(T0)
    book.move(S.PROVISIONED, now=T0 + 20, reason="Deployed")
    book.fail(ErrorType.POWER_MANAGEMENT, "the BMC did not answer", now=T0 + 30, reason="x")
    got = shown(book)
    assert got["Provisioned"] == ("True", "Provisioned")  # still runs its image
    assert got["Ready"] == ("False", "Error")
    assert got["Manageable"] == ("False", "PowerFailure")
    assert got["BMCAccessible"] == ("False", "PowerFailure")


def test_an_unreachable_backend_leaves_the_bmc_unknown() -> None:
    book = available(T0)
    book.note_seen(now=T0 + 20, transient="Ironic is not answering")
    assert shown(book)["BMCAccessible"] == ("Unknown", "BackendUnavailable")
    assert shown(book)["Manageable"] == ("True", "Manageable")


def test_detached_and_externally_provisioned() -> None:
    book = available(T0)
    book.move(S.EXTERNALLY_PROVISIONED, now=T0 + 10, reason="Adopted")
    assert shown(book)["Provisioned"] == ("True", "Provisioned")
    assert shown(book)["Ready"] == ("True", "Provisioned")
    book.transition(now=T0 + 20, reason="Detached", status=OperationalStatus.DETACHED)
    got = shown(book)
    assert got["Ready"] == ("False", "Detached")
    assert got["Manageable"] == ("False", "Detached")
    assert got["BMCAccessible"] == ("Unknown", "Detached")


def test_last_transition_time_changes_only_when_the_status_does() -> None:
    book = available(T0)
    times = {c["type"]: c["lastTransitionTime"] for c in host_conditions(book)}
    book.move(S.PROVISIONING, now=T0 + 100, reason="ImageSet")
    after = {c["type"]: c for c in host_conditions(book)}
    # Provisioned stays False, reason NotProvisioned, the message the new state
    assert after["Provisioned"]["lastTransitionTime"] == times["Provisioned"]
    assert after["Provisioned"]["reason"] == "NotProvisioned"
    assert after["Provisioned"]["message"] == "provisioning"
    assert after["Progressing"]["lastTransitionTime"] != times["Progressing"]
    book.move(S.PROVISIONED, now=T0 + 200, reason="Deployed")
    done = {c["type"]: c for c in host_conditions(book)}
    assert done["Provisioned"]["lastTransitionTime"] == rfc3339(T0 + 200)
    assert done["Manageable"]["lastTransitionTime"] == times["Manageable"]
    again = host_conditions(book)
    assert again == list(done.values())  # reading changes nothing


def test_a_projection_read_twice_needs_no_write_and_survives_a_restart() -> None:
    book = available(T0)
    book.move(S.PROVISIONING, now=T0 + 10, reason="ImageSet")
    book.move(S.PROVISIONED, now=T0 + 20, reason="Deployed")
    status = host_status(book, confirmed_seq=0)
    assert not host_status_differs(host_status(book, confirmed_seq=0), status)
    back = restore("ns/h", status, None, now=T0 + 1000)
    assert host_conditions(back) == status["conditions"]


def test_observed_generation_is_the_spec_generation_seen() -> None:
    book = available(T0)
    book.note(now=T0 + 10, observed_generation=4)
    assert {c["observedGeneration"] for c in host_conditions(book)} == {4}


def test_a_long_message_is_cut_and_the_status_fits_the_schema() -> None:
    book = available(T0)
    book.move(S.PROVISIONING, now=T0 + 10, reason="ImageSet")
    book.fail(ErrorType.PROVISIONING, "x" * 100_000, now=T0 + 12, reason="Failed")
    status = host_status(book, confirmed_seq=0)
    provisioned = next(c for c in status["conditions"] if c["type"] == "Provisioned")
    assert len(provisioned["message"]) == MESSAGE_MAX
    crd = crds.generate()["hoststate.io_hosts.yaml"]
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert prune(status, schema["properties"]["status"]) == status


# baremetal-operator v0.13.2, internal/controller/metal3.io/baremetalhost_controller.go,
# computeConditions (lines 2259-2312): per state, (AvailableForProvisioning, Provisioned,
# Ready) reasons of a host with nothing wrong.
BMO_V0_13_2_REASONS = {
    S.INSPECTING: ("NotAvailable", "NotProvisioned", "NotProvisioned"),
    S.PREPARING: ("NotAvailable", "NotProvisioned", "NotProvisioned"),
    S.AVAILABLE: ("Available", "NotProvisioned", "NotProvisioned"),
    S.PROVISIONING: ("NotAvailable", "NotProvisioned", "NotProvisioned"),
    S.PROVISIONED: ("NotAvailable", "Provisioned", "Provisioned"),
    S.EXTERNALLY_PROVISIONED: ("NotAvailable", "Provisioned", "Provisioned"),
    S.DEPROVISIONING: ("NotAvailable", "NotProvisioned", "NotProvisioned"),
}


@pytest.mark.parametrize("state", list(BMO_V0_13_2_REASONS), ids=lambda s: s.value)
def test_reasons_are_baremetal_operators(state: S) -> None:
    """Each state gives the reasons baremetal-operator v0.13.2's computeConditions sets:
    no Provisioning or ExternallyProvisioned reason on Provisioned or Ready, and no
    Inspecting on AvailableForProvisioning."""
    book = available(T0)
    if state != S.AVAILABLE:
        book.move(state, now=T0 + 10, reason="x")
    got = shown(book)
    reasons = tuple(got[t][1] for t in ("AvailableForProvisioning", "Provisioned", "Ready"))
    assert reasons == BMO_V0_13_2_REASONS[state]
