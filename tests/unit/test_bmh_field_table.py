"""Every BareMetalHost spec field of the pinned baremetal-operator has an answer: in the
code (carried, or refused with what to do) and in the field table of
docs/baremetal-operator.md. The fields are read from baremetal-operator v0.13.2's own
CRD (config/base/crds/bases/metal3.io_baremetalhosts.yaml, from its Go module through
tools/metal3/crds.sh), not copied here, so a new field of a newer pin fails until it is
answered."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from state_controller.api import baremetalhost as bmh
from testbed.kube import metal3_crds

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## A BareMetalHost's fields on a Host"


def crd_spec() -> dict[str, dict[str, object]]:
    crd = yaml.safe_load(metal3_crds().read_text())
    [version] = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    properties: dict[str, dict[str, object]] = version["schema"]["openAPIV3Schema"]["properties"][
        "spec"
    ]["properties"]
    return properties


def table_rows() -> list[tuple[str, str]]:
    """(first cell, second cell) of each row of the section's first table."""
    text = (ROOT / "docs" / "baremetal-operator.md").read_text()
    section = text[text.index(SECTION) :]
    rows: list[tuple[str, str]] = []
    for line in section.splitlines()[1:]:
        if line.startswith("|") and not line.startswith("| ---"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            rows.append((cells[0], cells[1]))
        elif rows and not line.startswith("|"):
            break  # the end of the first table
    return rows[1:]  # without the header


def named(cell: str) -> set[str]:
    """The field names a first cell gives, those in parentheses (subfields) aside."""
    outside = re.sub(r"\([^)]*\)", "", cell)
    return set(re.findall(r"`([A-Za-z]+)`", outside))


def test_the_code_answers_every_field_of_the_crd() -> None:
    fields = crd_spec()
    assert len(fields) == 22  # v0.13.2's count, a check that the CRD was read
    assert sorted(bmh.FIELDS) == sorted(fields)


def test_the_field_table_has_every_field_of_the_crd() -> None:
    rows = table_rows()
    in_table = set().union(*(named(first) for first, _ in rows))
    missing = sorted(set(crd_spec()) - in_table)
    assert not missing, f"docs/baremetal-operator.md's field table lacks {missing}"


def test_the_table_says_refused_where_the_code_refuses() -> None:
    for first, what in table_rows():
        for field in named(first) & set(bmh.REFUSED):
            assert what.startswith("refused"), field
    subfields = {f.split(".")[1]: f.split(".")[0] for f in bmh.REFUSED if "." in f}
    rows = dict(table_rows())
    for sub, field in subfields.items():
        [row] = [what for first, what in rows.items() if f"`{field}`" in first]
        assert f"`{sub}`" in row and "refused" in row, sub


def test_the_subfields_the_code_knows_are_the_crds() -> None:
    spec = crd_spec()
    for field, known in (("bmc", bmh.SUBFIELDS["bmc"]), ("image", bmh.SUBFIELDS["image"]),
                         ("rootDeviceHints", bmh.SUBFIELDS["rootDeviceHints"])):  # fmt: skip
        properties = spec[field]["properties"]
        assert isinstance(properties, dict)
        assert sorted(known) == sorted(properties), field
