"""The docs cannot drift from the code: the API reference is what the code generates,
and every output sample is what a real run prints now (testbed.samples). Nor from each
other: the README's documentation index lists the docs site's pages, mkdocs.yml's nav."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from state_controller.api import reference
from state_controller.api.columns import HOST_COLUMNS, HOSTSTATE_COLUMNS, Column
from testbed import samples

ROOT = Path(__file__).resolve().parents[2]


def test_the_api_reference_is_what_the_code_generates(tmp_path: Path) -> None:
    [written] = reference.write(tmp_path)
    committed = ROOT / reference.REFERENCE
    assert written.read_text() == committed.read_text(), "run: state-controller gen reference"


def test_every_sample_is_made_by_a_run() -> None:
    made = {f"{one.name}.txt" for one in (*samples.FAST, *samples.SLOW)}
    made |= {f"{name}.txt" for name in samples.BY_TESTS}
    present = {p.name for p in samples.SAMPLES.iterdir()} - {samples.HOSTS_FILE}
    assert present == made, "a sample no run makes, or a run whose sample is missing"


@pytest.mark.slow
def test_samples_match_a_real_run(tmp_path: Path) -> None:
    """The demo, the bootstrap and their ``get``s run again (about 12 s): each sample
    must match, but for the cells that depend on time and the counts of progress lines."""
    fresh = samples.fast_samples(tmp_path)
    stale = {}
    for name, text in fresh.items():
        committed = (samples.SAMPLES / f"{name}.txt").read_text()
        problems = samples.differences(committed, text)
        if problems:
            stale[name] = problems
    assert not stale, f"run scripts/docs-samples --fast; differences: {stale}"


def test_the_masks_keep_what_is_not_time() -> None:
    table = "NAME   STATE         IN-STATE   AGE\nhost-0   provisioned   2m10s      <unknown>\n"
    assert samples.differences(table, table.replace("2m10s", "3s  ")) == []
    assert samples.differences(table, table.replace("provisioned", "registering")) != []
    assert samples.differences(table, table.replace("IN-STATE", "SINCE")) != []
    line = "[  2.2s] update: 5/8 nodes at their new config | draining=3 | stuck host-0002"
    other = (
        "[ 12.2s] update: 7/8 nodes at their new config | draining=1, rebooting=2 | stuck host-0002"
    )
    assert samples.differences(line, other) == []
    late = (
        "2026-11-29T01:35:00Z WARNING state_controller.runtime.pools.reconciler: pool worker: "
        "the rollout runs late: expected to end at 2026-11-29T01:36:00Z"
    )
    assert samples.differences(f"{line}\n{late}", other) == []  # told or not, as timing falls
    stuck = "2026-11-29T01:35:00Z WARNING state_controller.hosts: host-0002 Stuck: draining"
    assert samples.differences(f"{line}\n{stuck}", other) != []  # any other line is kept
    assert samples.differences(line, other.replace("new config", "config")) != []
    # a progress line's fields after its subject come and go with the moment it printed
    first = "[  0.1s] 0/8 provisioned | inspecting=8 | errors 0 | stuck 0"
    assert samples.differences(first, "[  0.2s] 0/8 provisioned | errors 0") == []
    assert samples.differences(first, "[  0.2s] update: 0/8 nodes at their new config") != []
    # a UUID is masked whole, even one with a group that reads like a duration
    uuid = "323d1c38-052a-4ae2-8d1d-f50b5396cc6b"
    assert samples.masked(f"node {uuid} active") == "node <uuid> active"
    stuck = (
        "2026-11-25T15:18:03.476Z WARNING state_controller.hosts: demo/host-0002 Stuck: node"
        " host-0002 has been draining for 0s, longer than the 0s allowed: draining: 1 pod"
        " left, eviction blocked by PodDisruptionBudget demo/host-0002-db  host=demo/host-0002"
        " state=draining reason=Stuck"
    )
    counting = stuck.replace("1 pod left, eviction", "counting the pods; eviction")
    assert samples.differences(stuck, counting) == []
    assert samples.differences(stuck, counting.replace("draining for", "rebooting for")) != []
    assert samples.differences(stuck, stuck.replace("state=draining", "state=rebooting")) != []


def _expected_header(columns: tuple[Column, ...], wide: bool) -> list[str]:
    return ["NAME", *(c.name.upper() for c in columns if wide or not c.priority)]


def test_the_kubectl_samples_have_the_columns_the_code_defines() -> None:
    """kubectl reads its columns from the CRDs; the CRDs take them from the code. Without
    a control plane (tests/cluster/test_docs_samples.py has one), check each kubectl
    sample's header against the code and that no row has more cells than it."""
    for name, columns in (("hoststates", HOSTSTATE_COLUMNS), ("hosts", HOST_COLUMNS)):
        for wide in (False, True):
            text = samples.SAMPLES / f"kubectl-get-{name}{'-wide' if wide else ''}.txt"
            _, header, *rows = text.read_text().splitlines()
            assert header.split() == _expected_header(columns, wide), text.name
            starts = [m.start() for m in re.finditer(r"\S+", header)]
            for row in rows:
                cells = [m.start() for m in re.finditer(r"\S+", row[: starts[-1]])]
                assert set(cells) <= set(starts), (text.name, row)


README = ROOT / "README.md"
MKDOCS = ROOT / "mkdocs.yml"
# A link into docs/ from Markdown: [text](docs/page.md#anchor) or ![alt](docs/images/x.svg).
_DOCS_LINK = re.compile(r"\]\(docs/([^)\s#]+)")


def _nav_pages(nav: object) -> set[str]:
    """Every page of mkdocs.yml's nav (paths under docs/), at any depth of its sections."""
    if isinstance(nav, str):
        return set() if "://" in nav else {nav}
    if isinstance(nav, list):
        return {page for item in nav for page in _nav_pages(item)}
    if isinstance(nav, dict):
        return {page for value in nav.values() for page in _nav_pages(value)}
    raise AssertionError(f"mkdocs.yml's nav: an entry neither a page nor a section: {nav!r}")


def _readme_index() -> str:
    """The README's "## Documentation" section, up to the next "## " heading."""
    text = README.read_text()
    start = text.index("\n## Documentation\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def test_the_readme_index_lists_every_page_of_the_docs_site() -> None:
    """The README's documentation index and mkdocs.yml's nav name the same pages: a page
    added to the site and not to the README (or the other way round) fails, named."""
    nav = _nav_pages(yaml.safe_load(MKDOCS.read_text())["nav"])
    index = {p for p in _DOCS_LINK.findall(_readme_index()) if p.endswith(".md")}
    problems = [f"in mkdocs.yml's nav, not in the README's index: docs/{p}" for p in nav - index]
    problems += [f"in the README's index, not in mkdocs.yml's nav: docs/{p}" for p in index - nav]
    problems.sort()
    assert not problems, "\n".join(problems)


def test_every_readme_link_into_docs_exists() -> None:
    """mkdocs build --strict checks the site's own links; the README is not on the site."""
    linked = set(_DOCS_LINK.findall(README.read_text()))
    missing = sorted(p for p in linked if not (ROOT / "docs" / p).exists())
    assert not missing, f"the README links to docs/ files that do not exist: {missing}"
