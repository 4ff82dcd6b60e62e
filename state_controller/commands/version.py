"""``state-controller version``: the version of hoststate (pyproject.toml's, as
installed), and with ``-o json`` the Python that runs it and the API versions it serves."""

from __future__ import annotations

import argparse
import json
import platform

HELP = "print hoststate's version (-o json: with Python's and the API versions served)"


def add(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-o",
        "--output",
        choices=["json"],
        default=None,
        help="json: version, python and apiVersions as one JSON object",
    )


def main(args: argparse.Namespace) -> int:
    from ..api import API_VERSION
    from ..health.share import controller_version

    version = controller_version()
    if args.output == "json":
        served = {"version": version, "python": platform.python_version()}
        print(json.dumps({**served, "apiVersions": [API_VERSION]}, indent=2))
    else:
        print(version)
    return 0
