"""Shared pydantic configuration and small types used by every API model."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
CONDITION_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
CONDITION_MESSAGE_MAX = 32768
"""metav1.Condition's limit for ``message``."""

MESSAGE_MAX = 4096
"""Free text the controller writes besides conditions (``errorMessage``, history
messages): enough for any backend's error, and small enough that a full history
(``HISTORY_MAX_ITEMS`` entries) stays far below etcd's 1.5 MiB object limit."""

NAME_MAX = 253
"""A Kubernetes object name (DNS subdomain), also used for other short identifiers."""

WORD_MAX = 64
"""One token the controller writes: a state, a chapter, an outcome."""

REASON_MAX = 1024
"""metav1.Condition's limit for ``reason``; history reasons use it too."""

HISTORY_MAX_ITEMS = 256
"""The longest history the schema holds. The controller keeps 50 transitions by
default (``books.book.Limits.history``, which only code sets, through
``ControllerConfig.limits``; no flag): 256 leaves room to raise it five-fold while
a full history of ``MESSAGE_MAX`` messages stays under 1.2 MB."""

CHAPTERS_MAX_ITEMS = 64
"""The most chapters the schema holds; the controller keeps 20 by default
(``books.book.Limits.chapters``, set like the history's limit)."""

CONDITIONS_MAX_ITEMS = 32
"""Room for every condition type: the 11 of ``hoststate.ConditionType`` and the 13
of the node-update vocabulary (UpdatePrepared, …, NodeDegraded)."""


class SpecModel(BaseModel):
    """What users write.

    The CRD schema is closed, so the API server drops an unknown field (or, with
    kubectl's default strict field validation, rejects the request naming it) and
    the embedded store does the same. ``extra="forbid"`` here is for what never
    passed that schema: an object stored under an older CRD in a store that does
    not prune, or an embedded store without validation (a restored backup); the
    controller then names the field in a condition, with a "did you mean".
    """

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


class StatusModel(BaseModel):
    """What the controller writes: parsed leniently so a newer status never breaks restore."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


Timestamp = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
"""RFC 3339, as the controller writes it (api.timefmt); the CRD says ``format: date-time``."""

Count = Annotated[int, Field(ge=0)]


@dataclass(frozen=True)
class Matches:
    """A string must match ``pattern``; ``message`` names the field and says the fix.

    One constraint stated once and enforced from here twice: by pydantic (the
    controller's parsing, the embedded store), and in the CRD as one CEL rule with
    the same message. It is deliberately not also an OpenAPI ``pattern``: the API
    server would then report one mistake twice, the pattern's copy quoting a
    regular expression instead of saying what to write.
    """

    pattern: str
    message: str

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        # Patterns are anchored; fullmatch keeps "$" from accepting a trailing newline,
        # as RE2's "$" (the API server's) does not.
        regex = re.compile(self.pattern)
        message = self.message

        def check(value: str) -> str:
            if regex.fullmatch(value) is None:
                raise ValueError(message)
            return value

        return core_schema.no_info_after_validator_function(check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        out = handler(schema)
        out.setdefault("x-kubernetes-validations", []).append(self.rule())
        return out

    def rule(self) -> dict[str, str]:
        return {"rule": f"self.matches(r'{self.pattern}')", "message": self.message}


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Condition(StatusModel):
    """A condition as the Kubernetes API conventions define it (metav1.Condition)."""

    type: Annotated[str, Field(max_length=316, pattern=CONDITION_TYPE_PATTERN)]
    status: ConditionStatus
    observed_generation: Count | None = None
    last_transition_time: Timestamp
    reason: Annotated[str, Field(min_length=1, max_length=REASON_MAX, pattern=REASON_PATTERN)]
    message: Annotated[str, Field(max_length=CONDITION_MESSAGE_MAX)]
