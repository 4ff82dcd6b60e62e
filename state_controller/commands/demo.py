"""``state-controller demo``: a simulated fleet on the embedded cluster, watched live."""

from __future__ import annotations

import argparse
import sys

from ..observability.endpoints import port_number
from ..provisioning.fault_plan import FAULT_KINDS, HEALTH_FAULT
from ..simulation.bmo_fleet import BMO_FAULTS, BmoFault
from ..simulation.nodes import UPDATE_FAULTS, UpdateFault
from .flags import ironic_settings, provisioner_flags, reach, reach_flags, trace_flag

HELP = "run a simulated fleet on the embedded cluster and watch it"
UPDATE_FAULT_KINDS = tuple(f.value for f in UPDATE_FAULTS)
ALL_FAULT_KINDS = (*FAULT_KINDS, HEALTH_FAULT, *UPDATE_FAULT_KINDS)
OBSERVED_FAULT_KINDS = tuple(f.value for f in BMO_FAULTS)


def add(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hosts", type=int, default=50, help="fleet size (default 50)")
    p.add_argument("--namespace", default="demo")
    p.add_argument(
        "--faults", action="store_true", help="inject failures into some hosts and their updates"
    )
    p.add_argument("--fault-rate", type=float, default=0.3, help="share of hosts with a fault")
    p.add_argument(
        "--fault-kinds",
        help=f"comma-separated subset of: {', '.join(ALL_FAULT_KINDS)} (default: all); "
        f"with --observe, of: {', '.join(OBSERVED_FAULT_KINDS)}",
    )
    p.add_argument(
        "--observe",
        action="store_true",
        help="observe instead of drive: a played baremetal-operator creates BareMetalHosts "
        "and walks them to provisioned (with --faults: a deploy it retries, an inspection "
        "that hangs, a BMC reporting its hardware Critical or Warning), then their Nodes "
        "update unless --no-update; hoststate reports on them as `run --sources "
        "baremetalhosts` would, and writes none",
    )
    p.add_argument(
        "--no-update",
        action="store_true",
        help="provision only: no Nodes, no rolling update",
    )
    # the flag's first name, before node updates were called updates everywhere
    p.add_argument("--no-upgrade", dest="no_update", action="store_true", help=argparse.SUPPRESS)
    p.add_argument(
        "--max-unavailable",
        type=int,
        default=5,
        help="nodes of a pool updating at once (default 5; 1: one at a time)",
    )
    p.add_argument(
        "--fault-attempts",
        type=int,
        default=2,
        help="attempts each fault fails before the host recovers (0: it never does)",
    )
    p.add_argument("--seed", type=int, default=1, help="seed for faults and hardware")
    p.add_argument("--speed", type=float, default=1.0, help="time scale (2 = twice as fast)")
    p.add_argument("--workers", type=int, default=4)
    p.add_argument(
        "--metrics-port", type=port_number, default=0, help="0 (default): pick a free port"
    )
    p.add_argument(
        "--exit-when-settled",
        action="store_true",
        help="exit when every host reached its target (default: keep serving /metrics until "
        "--timeout); non-zero if one did not by --timeout",
    )
    p.add_argument("--timeout", type=float, default=300.0, help="seconds (default 300)")
    p.add_argument("--json", action="store_true", help="print a JSON summary at the end")
    p.add_argument("--no-table", action="store_true", help="progress lines only")
    p.add_argument("--store", help="persist the embedded cluster to this sqlite file")
    p.add_argument(
        "--screenshot",
        metavar="FILE",
        help="save a picture (SVG, 120 by 40) of the rollout's frame with the most nodes "
        "held in their update (scripts/docs-samples makes the docs' one)",
    )
    trace_flag(p)
    p.add_argument(
        "--keep",
        action="store_true",
        help="with ironic: leave the demo's nodes in Ironic (default: delete the hosts at the end)",
    )
    p.add_argument(
        "--firmware-rollout",
        action="store_true",
        help="after the node update, give every host a new BIOS image, serviced --max-unavailable "
        "hosts of a pool at a time (with --faults: a BMC that refuses it, a flash that hangs)",
    )
    p.add_argument(
        "--remediation",
        metavar="off|all|POOL,…",
        help="the node pools whose lost reboots are power-cycled through the simulated BMC "
        "(default all; off shows a lost reboot holding its pool)",
    )
    provisioner_flags(p)
    reach_flags(p)


def _pools(chosen: str) -> frozenset[str] | None:
    chosen = chosen.strip()
    if chosen == "all":
        return None
    if chosen in ("", "off"):
        return frozenset()
    return frozenset(pool.strip() for pool in chosen.split(",") if pool.strip())


def observe_problem(args: argparse.Namespace, ironic: bool) -> str:
    """Why ``--observe`` cannot go with the other flags given ("" when it can): observe
    mode drives nothing, so what only a driven fleet has makes no sense with it."""
    if not args.observe:
        return ""
    driven = [
        flag
        for flag, given in (
            ("--provisioner ironic", ironic),
            ("--firmware-rollout", args.firmware_rollout),
            ("--remediation", args.remediation is not None),
            ("--store", args.store is not None),
            ("--keep", args.keep),
        )
        if given
    ]
    if not driven:
        return ""
    return (
        f"--observe with {', '.join(driven)}: in observe mode baremetal-operator (played) "
        "drives the BareMetalHosts and hoststate only reports on them, so there is no "
        "backend, servicing, remediation or kept store of its own; leave "
        f"{'it' if len(driven) == 1 else 'them'} out, or drop --observe"
    )


def main(args: argparse.Namespace) -> int:
    from ..demo import DemoOptions, run_demo

    known = OBSERVED_FAULT_KINDS if args.observe else ALL_FAULT_KINDS
    kinds = tuple(k.strip() for k in (args.fault_kinds or ",".join(known)).split(",") if k.strip())
    unknown = [k for k in kinds if k not in known]
    if unknown:
        also = " (with --observe, baremetal-operator's faults)" if args.observe else ""
        print(
            f"--fault-kinds: unknown {', '.join(unknown)}; use some of {', '.join(known)}{also}",
            file=sys.stderr,
        )
        return 2
    if (
        args.hosts < 1
        or args.speed <= 0
        or not 0 <= args.fault_rate <= 1
        or args.fault_attempts < 0
        or args.max_unavailable < 1
    ):
        print(
            "--hosts must be ≥ 1, --speed > 0, --fault-rate within 0..1, --fault-attempts ≥ 0, "
            "--max-unavailable ≥ 1",
            file=sys.stderr,
        )
        return 2
    try:
        ironic = ironic_settings(args)
        allowed = reach(args)
    except ValueError as err:
        print(str(err), file=sys.stderr)
        return 2
    problem = observe_problem(args, ironic is not None)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    if ironic is not None and args.faults:
        print(
            "--faults injects failures into simulated hardware only; with Ironic, make its "
            "nodes fail (e.g. an unreachable image) or leave --faults out",
            file=sys.stderr,
        )
        return 2
    opts = DemoOptions(
        hosts=args.hosts,
        namespace=args.namespace,
        faults=args.faults,
        fault_rate=args.fault_rate,
        fault_kinds=tuple(k for k in FAULT_KINDS if k in kinds),
        health_faults=HEALTH_FAULT in kinds,
        update_fault_kinds=tuple(UpdateFault(k) for k in UPDATE_FAULT_KINDS if k in kinds),
        update=not args.no_update,
        max_unavailable=args.max_unavailable,
        fault_attempts=args.fault_attempts,
        seed=args.seed,
        speed=args.speed,
        workers=args.workers,
        metrics_port=args.metrics_port,
        exit_when_settled=args.exit_when_settled,
        timeout=args.timeout,
        json=args.json,
        table=not args.no_table,
        store=args.store,
        trace=args.trace,
        ironic=ironic,
        reach=allowed,
        keep=args.keep,
        screenshot=args.screenshot,
        remediation_pools=_pools(args.remediation or "all"),
        firmware_rollout=args.firmware_rollout,
        observe=args.observe,
        bmo_fault_kinds=tuple(BmoFault(k) for k in OBSERVED_FAULT_KINDS if k in kinds),
    )
    try:
        return run_demo(opts)
    except KeyboardInterrupt:  # Ctrl-C: the demo has stopped its controller and servers
        return 130
