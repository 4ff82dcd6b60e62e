"""The API reference, ``docs/reference/api.md``: every field of every kind, read from the
CRDs :mod:`.crds` generates (type, default, validation, description), and the printer
columns ``kubectl get`` and ``state-controller get`` print. ``state-controller gen``
writes it; a test fails when it is stale."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import GROUP, VERSION
from .crds import generate

REFERENCE = Path("docs/reference/api.md")
Schema = dict[str, Any]


def _prose(text: str) -> str:
    """One table cell of prose: docstring reST quotes as Markdown code, no line breaks,
    and nothing Markdown would read as a tag or a cell border outside code spans."""
    text = " ".join(text.replace("``", "`").split())
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backquote: no code spans at all
        parts = [text.replace("`", "'")]
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(_code(part))
        else:
            for char, escaped in (("\\", "\\\\"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|")):
                part = part.replace(char, escaped)
            out.append(re.sub(r"([*_\[\]])", r"\\\1", part))
    return "".join(out)


def _code(value: object) -> str:
    """``value`` as code in a table cell; with a ``|``, as HTML, which both MkDocs and
    GitHub read as one cell (each reads an escaped pipe in backquotes differently)."""
    text = value if isinstance(value, str) else json.dumps(value)
    if "|" in text:
        return "<code>" + html.escape(text).replace("|", "&#124;") + "</code>"
    return f"`{text}`" if text else '`""`'


def _type(schema: Schema) -> str:
    kind = str(schema.get("type", "object"))
    if kind == "array":
        return f"list of {_type(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"map of {_type(schema['additionalProperties'])}"
    if "format" in schema:
        return f"{kind} ({schema['format']})"
    return kind


def _validation(schema: Schema, required: bool) -> str:
    rules: list[str] = ["required"] if required else []
    if "enum" in schema:
        rules.append("one of " + ", ".join(_code(v) for v in schema["enum"]))
    if "pattern" in schema:
        rules.append(f"matches {_code(schema['pattern'])}")
    low, high = schema.get("minLength"), schema.get("maxLength")
    if low is not None and high is not None:
        rules.append(f"{low} to {high} characters")
    elif high is not None:
        rules.append(f"at most {high} characters")
    elif low is not None:
        rules.append(f"at least {low} characters")
    if "minimum" in schema:
        rules.append(f"≥ {schema['minimum']}")
    if "maximum" in schema:
        rules.append(f"≤ {schema['maximum']}")
    if "maxItems" in schema:
        rules.append(f"at most {schema['maxItems']} items")
    if schema.get("x-kubernetes-list-type") == "map":
        keys = ", ".join(_code(k) for k in schema.get("x-kubernetes-list-map-keys", []))
        rules.append(f"one item per {keys}")
    for rule in schema.get("x-kubernetes-validations", []):
        where = f" on {_code(rule['fieldPath'])}" if "fieldPath" in rule else ""
        message = re.sub(r"^[\w.]+: ", "", rule["message"])  # the path is the row's already
        rules.append(f"rule{where}: {_prose(message)}")
    return "; ".join(rules)


def fields(schema: Schema, path: str) -> Iterator[tuple[str, Schema, bool]]:
    """(path, schema, required) for every field below ``schema``, depth first, in the
    order the model declares them; list items appear as ``path[]``."""
    required = set(schema.get("required", []))
    for name, sub in schema.get("properties", {}).items():
        here = f"{path}.{name}"
        yield here, sub, name in required
        yield from _below(sub, here)


def _below(schema: Schema, path: str) -> Iterator[tuple[str, Schema, bool]]:
    if "properties" in schema:
        yield from fields(schema, path)
    elif isinstance(schema.get("items"), dict):
        yield from _below(schema["items"], f"{path}[]")
    elif isinstance(schema.get("additionalProperties"), dict):
        yield from _below(schema["additionalProperties"], f"{path}.*")


def _field_table(schema: Schema, root: str) -> list[str]:
    lines = [
        "| field | type | default | validation | description |",
        "| --- | --- | --- | --- | --- |",
    ]
    for path, sub, required in fields(schema, root):
        default = _code(sub["default"]) if "default" in sub else ""
        description = _prose(sub.get("description", ""))
        cells = (_code(path), _type(sub), default, _validation(sub, required), description)
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _column_table(columns: list[Schema]) -> list[str]:
    lines = [
        "| column | shown | JSON path | type | description |",
        "| --- | --- | --- | --- | --- |",
    ]
    for c in columns:
        shown = "`-o wide`" if c.get("priority") else "default"
        cells = (f"`{c['name'].upper()}`", shown, _code(c["jsonPath"]), c["type"])
        lines.append("| " + " | ".join(cells) + f" | {_prose(c.get('description', ''))} |")
    return lines


def _kind(crd: Schema) -> list[str]:
    names, version = crd["spec"]["names"], crd["spec"]["versions"][0]
    kind, plural = names["kind"], names["plural"]
    properties = version["schema"]["openAPIV3Schema"]["properties"]
    columns = version["additionalPrinterColumns"]
    namespaced = crd["spec"]["scope"] == "Namespaced"
    scope = "namespaced" if namespaced else "cluster-scoped"
    after = " (and `NAMESPACE` before it, listing every namespace)" if namespaced else ""
    shorts = ", ".join(f"`{s}`" for s in names["shortNames"])
    return [
        f"## {kind}",
        "",
        f"`{plural}.{GROUP}`, {scope}, short name {shorts}, generated into "
        f"`api/{VERSION}/{GROUP}_{plural}.yaml`. {_prose(properties['spec']['description'])}",
        "",
        f"### {kind} columns",
        "",
        f"`kubectl get {plural}` and `state-controller get {plural}` print the default "
        f"columns after `NAME`{after}; `-o wide` prints every column, in this order.",
        "",
        *_column_table(columns),
        "",
        f"### {kind} spec",
        "",
        *_field_table(properties["spec"], "spec"),
        "",
        f"### {kind} status",
        "",
        "Written by the controller only.",
        "",
        *_field_table(properties["status"], "status"),
        "",
    ]


def render() -> str:
    lines = [
        "# API reference",
        "",
        "<!-- Generated by `state-controller gen reference` (state_controller/api/reference.py)"
        " from the CRDs; do not edit. -->",
        "",
        f"Group `{GROUP}`, version `{VERSION}`. Generated from the CRDs the code writes into",
        f"`api/{VERSION}/` (themselves generated from the pydantic models in",
        "`state_controller/api/`); a test fails when this page and the code differ.",
        "Validation is the API server's: a value it refuses is refused at `kubectl apply`,",
        "with the rule's message. A status field has no default: the controller writes it.",
        "",
    ]
    for crd in generate().values():
        lines += _kind(crd)
    return "\n".join(lines).rstrip("\n") + "\n"


def write(root: Path) -> list[Path]:
    path = root / REFERENCE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render())
    return [path]
