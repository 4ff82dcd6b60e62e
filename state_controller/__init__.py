"""hoststate: one controller that changes and reports the state of bare-metal hosts."""

from importlib import metadata

try:  # pyproject.toml's [project] version is the one source; this reads what was installed
    __version__ = metadata.version("hoststate")
except metadata.PackageNotFoundError:  # a source tree never installed
    __version__ = "unknown"
