"""The terminal as one live frame: rich's Live on the alternate screen, with the log
lines written meanwhile held until it closes."""

from __future__ import annotations

import io
import logging
import sys
from types import TracebackType
from typing import Any

from rich.console import Console, RenderableType
from rich.live import Live


class LiveScreen:
    """The terminal as one live frame (rich's Live on the alternate screen), redrawn by
    :meth:`show`; on leaving, the last frame is printed on the normal screen.

    Log lines written to the terminal while the screen is up would land inside a frame
    and tear it; they are held (up to :data:`HELD_LOG_LINES`, the rest counted) and
    printed below the last frame when the screen closes, so none is lost from view.
    """

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console()
        self._live = Live(
            console=self.console,
            screen=True,
            auto_refresh=False,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._last: RenderableType | None = None
        self._after: list[str] = []
        self._held = _HeldLines()
        self._swapped: list[tuple[logging.StreamHandler[Any], Any]] = []

    @property
    def size(self) -> tuple[int, int]:
        return self.console.size.width, self.console.size.height

    def show(self, renderable: RenderableType) -> None:
        self._last = renderable
        self._live.update(renderable, refresh=True)

    def after(self, line: str) -> None:
        """A line to print below the last frame once the screen closes."""
        self._after.append(line)

    def __enter__(self) -> LiveScreen:
        for handler in logging.getLogger().handlers:
            stream = getattr(handler, "stream", None)
            if isinstance(handler, logging.StreamHandler) and _on_terminal(stream):
                self._swapped.append((handler, handler.setStream(self._held)))
        self._live.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._live.stop()
        for handler, stream in self._swapped:
            handler.setStream(stream)
        if self._last is not None:
            self.console.print(self._last)
        for line in self._after:
            self.console.print(line, highlight=False, markup=False)
        self._held.release(sys.stderr)


HELD_LOG_LINES = 5000


def _on_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no such method, or closed
        return False


class _HeldLines(io.TextIOBase):
    """A stream that keeps the first :data:`HELD_LOG_LINES` lines written to it."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._dropped = 0

    def write(self, text: str) -> int:
        for line in text.splitlines(keepends=True):
            if len(self._lines) < HELD_LOG_LINES:
                self._lines.append(line)
            else:
                self._dropped += 1
        return len(text)

    def release(self, out: Any) -> None:
        out.write("".join(self._lines))
        if self._dropped:
            out.write(f"({self._dropped} more log lines were dropped while the screen was up)\n")
        out.flush()
