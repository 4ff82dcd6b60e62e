"""Logs: readable text by default, one JSON object per line with ``--log-format json``.

A line about a host carries ``host``, ``state``, ``error_type`` and ``reason`` as
fields (JSON keys, or ``key=value`` after the text message), so a log pipeline can
filter on them. Messages come from the book's journal and the provisioner's
answers, which never hold a credential.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Literal

Format = Literal["text", "json"]
LEVELS = ("debug", "info", "warning", "error")
# The fields a log line may carry beside its message (``extra=`` of a logging call).
FIELDS = ("host", "state", "error_type", "reason", "outage", "event")


def _fields(record: logging.LogRecord) -> dict[str, str]:
    return {name: str(getattr(record, name)) for name in FIELDS if hasattr(record, name)}


def _stamp(record: logging.LogRecord) -> str:
    whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
    return f"{whole}.{int(record.msecs):03d}Z"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "ts": _stamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            **_fields(record),
        }
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


LEADER_ELECTION_LOGGER = "leaderelection"  # kubernetes.leaderelection's logger


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = f"{_stamp(record)} {record.levelname} {record.name}: {record.getMessage()}"
        fields = " ".join(
            f"{k}={json.dumps(v) if ' ' in v else v}" for k, v in _fields(record).items()
        )
        if fields:
            text += f"  {fields}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def configure(format: Format = "text", level: str = "info") -> None:
    """Send every log line to stderr in ``format``, from ``level`` up."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if format == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # The kubernetes client's leader election says "has successfully acquired lease" at
    # INFO on every renewal (each --retry-period); the controller tells the changes of
    # leadership itself. Its warnings and errors still show, and all of it at debug.
    chatty = logging.getLogger(LEADER_ELECTION_LOGGER)
    chatty.setLevel(logging.NOTSET if level.upper() == "DEBUG" else logging.WARNING)
