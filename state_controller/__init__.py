"""hoststate: one controller that changes and reports the state of bare-metal hosts."""

__version__ = "0.1.0"
