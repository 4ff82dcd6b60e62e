"""``state-controller gen``: the files generated from the code that defines them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "generate files from the code that defines them (CRDs, monitoring, reference docs)"
GENERATED = ("all", "crds", "reference", "prometheusrule", "dashboards", "metrics")


def add(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "what",
        choices=list(GENERATED),
        help="crds: api/v1alpha1/ and charts/hoststate/crds/; reference: docs/reference/api.md "
        "(every field and printer column of the CRDs); prometheusrule: "
        "manifests/base/prometheusrule.yaml from manifests/prometheus/hoststate.rules.yaml; "
        "dashboards: dashboards/*.json; "
        "metrics: docs/metrics.md; all: every one",
    )
    p.add_argument(
        "--root", default=".", help="the project's directory, where the files go (default .)"
    )


def main(args: argparse.Namespace) -> int:
    from ..api import crds
    from ..monitoring import rules

    root = Path(args.root)
    written: list[Path] = []
    if args.what in ("all", "crds"):
        written += crds.write(root / crds.API_DIR)
        written += crds.write_chart(root)
    if args.what in ("all", "reference"):
        from ..api import reference

        written += reference.write(root)
    if args.what in ("all", "dashboards"):
        from ..monitoring import dashboards

        written += dashboards.write(root)
    if args.what in ("all", "metrics"):
        from ..monitoring import catalogue

        written += catalogue.write(root)
    if args.what in ("all", "prometheusrule"):
        try:
            written += rules.write(root)
        except (OSError, ValueError) as err:
            print(f"state-controller gen: {err}", file=sys.stderr)
            return 1
    for path in written:
        print(path)
    return 0
