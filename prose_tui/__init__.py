"""prose-tui: a terminal run explorer for OpenProse."""

__version__ = "0.1.0"
