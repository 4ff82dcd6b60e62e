"""Every named mutant (scripts/mutants) still finds the exact text it breaks: a module
renamed or a line reworded would otherwise turn the mutation check into an error at the
moment someone runs it, long after the change."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.mutants import MUTANTS, ROOT, Mutant


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_the_text_each_mutant_breaks_is_there_once(mutant: Mutant) -> None:
    text = (ROOT / mutant.path).read_text()
    assert text.count(mutant.old) == 1, f"{mutant.name}: update its text in {mutant.path}"
    for path in mutant.tests:
        if not path.startswith("-") and "/" in path:
            assert Path(ROOT / path.split("::")[0]).exists(), path
