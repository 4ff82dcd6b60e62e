"""What several commands share: the parser that reports a mistake in one line, and the
flags of tracing, the simulated machines' timings and the provisioner."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, NoReturn

from ..books.stuck import parse_duration
from ..observability.tracing import CHOICES as TRACE_EXPORTERS
from ..provisioning.simulated import TIMINGS

if TYPE_CHECKING:
    from ..api.reach import Reach
    from ..provisioning.ironic import IronicSettings
    from ..remediation.policy import RemediationPolicy

IRONIC_FLAGS = (
    "ironic_username",
    "ironic_password_file",
    "ironic_credentials_dir",
    "ironic_driver",
    "ironic_ca_file",
)


class OneLineParser(argparse.ArgumentParser):
    """A mistake on the command line is one line that says what is wrong, not the usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def kube_flags(p: argparse.ArgumentParser) -> None:
    """Which cluster: a kubeconfig (the usual places by default) and its context."""
    p.add_argument("--kubeconfig", help="default: $KUBECONFIG, ~/.kube/config, or in-cluster")
    p.add_argument("--context", help="kubeconfig context")


def trace_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--trace",
        choices=[c for c in TRACE_EXPORTERS if c != "memory"],
        default=None,
        help="export traces: otlp (OTEL_EXPORTER_OTLP_ENDPOINT…), console, or none; "
        "default: $OTEL_TRACES_EXPORTER, else none",
    )


def simulated_timings_flag(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument(
        "--simulated-timings",
        choices=list(TIMINGS),
        default=default,
        help="how long the simulated machines take: zero, or demo (seconds per step); "
        "default %(default)s",
    )


def provisioner_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "provisioner",
        "which backend changes the hosts; --ironic-url alone selects ironic",
    )
    g.add_argument(
        "--provisioner",
        choices=["simulated", "ironic"],
        default=None,
        help="simulated hardware (default), or a real OpenStack Ironic",
    )
    g.add_argument("--ironic-url", help="Ironic API endpoint, e.g. https://ironic.example:6385")
    g.add_argument("--ironic-username", help="HTTP basic auth user (omit for a noauth Ironic)")
    g.add_argument("--ironic-password-file", help="file holding the HTTP basic auth password")
    g.add_argument(
        "--ironic-credentials-dir",
        help="directory with 'username' and 'password' files (a mounted Secret)",
    )
    g.add_argument(
        "--ironic-driver",
        help="one hardware type for every node (fake-hardware for a test Ironic); "
        "default: from each host's BMC address",
    )
    g.add_argument(
        "--ironic-poll-delay",
        type=float,
        default=2.0,
        help="seconds between polls of a node that is busy (default 2)",
    )
    g.add_argument(
        "--ironic-health-every",
        type=float,
        default=120.0,
        help="seconds between reads of a resting host's hardware health, and of a host's "
        "node history, from Ironic (Ironic refreshes health at its power sync, 120 s by "
        "default); 0: health only when the host changes, node history never (default 120)",
    )
    g.add_argument("--ironic-ca-file", help="CA bundle for an https Ironic")
    g.add_argument("--ironic-insecure", action="store_true", help="skip TLS verification")
    g.add_argument(
        "--ironic-allow-http",
        action="store_true",
        help="accept a plain http --ironic-url on another machine: the BMC passwords travel "
        "in clear (loopback needs no flag)",
    )


def reach_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "reach",
        "where a Host may send the backend; by default anywhere but loopback, link-local "
        "(cloud metadata) and file:// images",
    )
    g.add_argument(
        "--allow-bmc",
        action="append",
        default=[],
        metavar="CIDR|NAME",
        help="BMC addresses Hosts may name: a CIDR, an address, a name, or *.zone (repeat, "
        "or separate with commas); given, any other BMC address is refused",
    )
    g.add_argument(
        "--allow-image-host",
        action="append",
        default=[],
        metavar="CIDR|NAME",
        help="image, checksum and firmware image servers Hosts may name, written as for "
        "--allow-bmc",
    )
    g.add_argument(
        "--allow-file-images",
        action="store_true",
        help="let spec.image.url name a file:// path on the Ironic conductor",
    )


def remediation_flags(p: argparse.ArgumentParser, default: str = "off") -> None:
    g = p.add_argument_group(
        "remediation",
        "power-cycle through its BMC a machine whose Node never came back from its update's "
        "reboot, or stays NotReady (docs/servicing.md)",
    )
    g.add_argument(
        "--remediation",
        default=default,
        metavar="off|all|POOL,…",
        help=f"the node pools remediated: none, every one, or those named (default {default})",
    )
    g.add_argument(
        "--remediation-attempts",
        type=int,
        default=3,
        metavar="N",
        help="power-cycles per unhealthy Node before a person is called (default 3)",
    )
    g.add_argument(
        "--remediation-not-ready-after",
        type=duration,
        default=300.0,
        metavar="DURATION",
        help="how long a Node is NotReady before it is power-cycled (default 5m); a lost "
        "reboot is one once its rebooting step is stuck (--stuck-after rebooting=…)",
    )
    g.add_argument(
        "--remediation-backoff",
        type=duration,
        default=300.0,
        metavar="DURATION",
        help="wait after the first attempt, doubled after each, up to 1h (default 5m)",
    )
    g.add_argument(
        "--remediation-max-unhealthy",
        default="40%",
        metavar="PERCENT",
        help="nothing in a pool is power-cycled while more of it than this is unhealthy "
        "(default 40%%)",
    )


def remediation(
    args: argparse.Namespace,
) -> tuple[RemediationPolicy | None, frozenset[str] | None]:
    """The remediation the flags ask for, and its pools (None: every pool); ValueError
    naming the flag of a bad value."""
    from ..remediation.policy import RemediationPolicy

    chosen = str(args.remediation).strip()
    if chosen in ("", "off"):
        return None, None
    pools = (
        None if chosen == "all" else frozenset(p.strip() for p in chosen.split(",") if p.strip())
    )
    if args.remediation_attempts < 1:
        raise ValueError("--remediation-attempts: give 1 or more (or --remediation off)")
    text = str(args.remediation_max_unhealthy).strip()
    try:
        share = float(text.removesuffix("%")) / 100
    except ValueError:
        share = -1.0
    if not text.endswith("%") or not 0 <= share <= 1:
        raise ValueError(
            f"--remediation-max-unhealthy {text!r}: give a percentage from 0% to 100%, e.g. 40%"
        )
    policy = RemediationPolicy(
        not_ready_after=args.remediation_not_ready_after,
        max_attempts=args.remediation_attempts,
        first_wait=args.remediation_backoff,
        max_wait=max(3600.0, args.remediation_backoff),
        max_unhealthy=share,
    )
    return policy, pools


def reach(args: argparse.Namespace) -> Reach:
    """The operator's limits the flags ask for; ValueError naming the flag of a bad entry."""
    from ..api.reach import ALLOW_BMC, ALLOW_IMAGE_HOST, Allowlist, Reach

    return Reach(
        bmc=Allowlist.parse(args.allow_bmc, ALLOW_BMC),
        images=Allowlist.parse(args.allow_image_host, ALLOW_IMAGE_HOST),
        file_images=args.allow_file_images,
    )


def ironic_settings(args: argparse.Namespace) -> IronicSettings | None:
    """The Ironic settings the flags ask for, None for the simulated provisioner."""
    from ..provisioning.ironic import load_ironic_settings

    chosen = args.provisioner or ("ironic" if args.ironic_url else "simulated")
    if chosen != "ironic":
        names = ("ironic_url", *IRONIC_FLAGS, "ironic_insecure", "ironic_allow_http")
        given = [f"--{n.replace('_', '-')}" for n in names if vars(args)[n]]
        if given:
            raise ValueError(
                f"{', '.join(given)}: only with --provisioner ironic; add it or drop "
                f"{'this flag' if len(given) == 1 else 'these flags'}"
            )
        return None
    return load_ironic_settings(
        args.ironic_url,
        username=args.ironic_username,
        password_file=args.ironic_password_file,
        credentials_dir=args.ironic_credentials_dir,
        driver=args.ironic_driver,
        poll_delay=args.ironic_poll_delay,
        health_every=args.ironic_health_every,
        ca_file=args.ironic_ca_file,
        insecure=args.ironic_insecure,
        allow_http=args.ironic_allow_http,
    )
