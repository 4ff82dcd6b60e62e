"""The BMC password taken out of a text, in every form a server may write it.

Ironic (or a proxy, or the BMC library it calls) may echo what it was sent: as is,
JSON-escaped inside a JSON body (``json.dumps(password)[1:-1]``, ASCII or not, and escaped
twice in a JSON string holding JSON), or URL-encoded in a query or a URL
(``quote(password, safe="")``, ``quote``, ``quote_plus``, hex in either case). Each form is
replaced by :data:`MASK`.

A password of :data:`SHORT` characters or more is masked wherever it occurs. A shorter one
is masked only where it stands as a value: a whole token (no letter or digit touching it)
right after ``=``, ``:`` or a quote, or before ``@`` (``user:pw@host``), or after a word
naming a password (``password x``, ``ipmi_password: x``), or as the whole text. A 1-3
character password in prose ("could not validate a node") is left there: masking every
``a`` would garble the sentence, and such a password is guessed in under a million tries
anyway; where it is given as a value, it is masked.

No regular expression is built from the password: :mod:`re` keeps its last 512 patterns,
and would keep passwords with them.
"""

from __future__ import annotations

import json
from urllib.parse import quote, quote_plus

MASK = "******"
SHORT = 4  # characters; shorter passwords are masked only where they stand as a value
_VALUE_AFTER = "=:'\""
_VALUE_BEFORE = "@'\""
_PASSWORD_WORDS = ("pass", "pwd", "secret")


def forms(password: str) -> list[str]:
    """The ways a server may write ``password``, longest first."""
    escaped = json.dumps(password)[1:-1]
    found = {
        password,
        escaped,
        json.dumps(password, ensure_ascii=False)[1:-1],
        json.dumps(escaped)[1:-1],
    }
    for encoded in (quote(password, safe=""), quote(password), quote_plus(password)):
        found.update((encoded, _lower_hex(encoded)))
    return sorted((f for f in found if f), key=len, reverse=True)


def scrub_text(text: str, password: str) -> str:
    """``text`` with every form of ``password`` replaced by :data:`MASK`."""
    if not password or not text:
        return text
    mask = _mask_everywhere if len(password) >= SHORT else _mask_values
    for form in forms(password):
        if form in text:
            text = mask(text, form)
    return text


def _mask_everywhere(text: str, form: str) -> str:
    return text.replace(form, MASK)


def _mask_values(text: str, form: str) -> str:
    out: list[str] = []
    done = 0
    start = text.find(form)
    while start >= 0:
        end = start + len(form)
        if _stands_as_value(text, start, end):
            out += (text[done:start], MASK)
            done = end
        start = text.find(form, end if done == end else start + 1)
    return "".join(out) + text[done:]


def _stands_as_value(text: str, start: int, end: int) -> bool:
    before, after = text[start - 1 : start], text[end : end + 1]
    if before.isalnum() or after.isalnum():
        return False  # part of a longer word or number
    if (before and before in _VALUE_AFTER) or (after and after in _VALUE_BEFORE):
        return True
    words = text[:start].split()
    if words and any(w in words[-1].lower() for w in _PASSWORD_WORDS):
        return True
    return not text[:start].strip() and not text[end:].strip()


def _lower_hex(encoded: str) -> str:
    """``%2F`` as ``%2f``: percent-encoding in lower-case hex, as some encoders write it."""
    parts = encoded.split("%")
    return parts[0] + "".join("%" + p[:2].lower() + p[2:] for p in parts[1:])
