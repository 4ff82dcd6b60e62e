"""Sharded scale run: `state-controller run --shard` replicas in processes of their own,
against a real control plane (etcd + kube-apiserver on this machine, a fresh one for
each replica count): how the work and the memory divide among replicas, what the API
server carries and what sets the limit, and how soon a dead replica's hosts move.

    .venv/bin/python -m benchmarks.shard_scale [--hosts 1000] [--replicas 1,3,5]
        [--timings zero|demo] [--lease-duration 15] [--workers 4] [--creators 1]
        [--failover]

For each replica count R: R replicas ``r0`` … ``r{R-1}`` (``--no-nodes``, one
``--simulated-hardware`` file shared between them, as replicas share one Ironic, each
with its Prometheus metrics on a free loopback port) wait for their Leases; then child
processes create the fleet (Hosts and their Secrets, ``--creators`` of them, each a
share with its own client, so the counts are the controller's own) and the run
measures, until every Host's ``.status.provisioning.state`` is ``provisioned`` (followed
by a watch of the Hosts):

* the time from the start of creation to every host provisioned, beside the time the
  creation took (the pace the hosts came at);
* per replica: its hosts (the ``HostStateController`` status' members, checked against
  the ``hoststate.io/shard`` labels), peak RSS (``VmHWM`` of ``/proc/PID/status``),
  CPU seconds, and API requests per host of its own by HTTP method (its
  ``rest_client_requests_total``, which counts by method: GET is get, list and watch
  alike; PUT is update and status write alike), from just before creation to settled
  (the controller's status showing every share);
* the writes per host by kube-apiserver's own count (``apiserver_request_total`` by verb
  and resource, the creator's two POSTs per host taken off), of which the sharder's label
  patches (two per assignment: the HostState's label, then the Host's; counted from the
  sharder's log lines "sharding …: assign"), beside the writes in the replicas' own
  count; and the writes per second at rest afterwards (Lease renewals);
* what sets the limit: kube-apiserver's, etcd's and kube-controller-manager's peak RSS
  and CPU seconds from creation to settled, etcd's database size, and the share of the
  machine's CPU that was busy meanwhile (``/proc/stat``; near 100 %, CPU is the limit).

The replicas' own count misses what the sharder and the Lease elections send: the
sharder writes through the bare client, not the instrumented one, and the elections
through the official client. kube-apiserver's count is the whole.

It prints a line per replica with those figures, and at the end one table row per
replica count.

``--failover``, on the largest replica count of at least 2, once the fleet is provisioned:

1. ``kill -9`` of a replica that does not hold the sharder's Lease. Measured from the
   kill: its Lease taken by the sharder; the first and the last of its hosts labelled
   with a live shard; and every one of its hosts **reconciled by its new owner**: the
   host has a series in the new owner's ``hoststate_host_state`` (the owner's book of the
   host, which it opens only in a reconcile of the host, from its HostState). The target
   is twice the Lease's duration plus the sharder's resync (2 s): the Lease dies two
   durations after its last renew, and the sharder looks at least every 2 s. Beside it,
   the writes kube-apiserver counted from the kill to the end (every client's: the
   survivors' and the sharder's), beside its write rate at rest measured just before
   the kill; the sharder's label patches; and the survivors' own count of their
   requests, raw and beyond their rate at rest.
2. The replica started again under its name: how long until it holds its Lease again
   (the sharder deletes the taken Lease once it has expired and no host names it), and
   until every host the ring gives it is labelled with it and in its books; whether all
   came back.
3. The same, killing the replica that holds the sharder's Lease: the time until another
   holds it is printed too.

Every process it starts (replicas, the fleet's creator, the control plane) is stopped on
exit, on an error and on Ctrl-C; the replicas also die with this process
(``setpriv --pdeathsig``). The replicas' logs are kept in the temporary folder printed
when a run fails. No thresholds: figures only. The machine's other load moves the times.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from benchmarks.harness import NS, Failed, TimedOut, control_plane, wait
from benchmarks.shard_scale_probes import (
    AT_REST,
    SHARDER_RESYNC,
    Counts,
    Fleet,
    PlaneUse,
    Replica,
    add,
    by_method,
    by_resource,
    minus,
    sampled,
    scrape_all,
    server_writes,
    total,
    writes,
)
from state_controller.cluster.interface import HOSTS, SECRETS
from state_controller.cluster.kube import KubeCluster
from state_controller.provisioning.simulated import TIMINGS
from state_controller.runtime.shards.sharder import SHARDER_LEASE
from state_controller.sharding.leases import LEASE_PREFIX
from state_controller.sharding.ring import Ring
from state_controller.simulation.fleet import host_manifest, secret_manifest
from testbed.shards import (
    election_periods,
    lease_holder,
    shard_members,
)

# -- one run -------------------------------------------------------------------------------


def create(kubeconfig: str, n: int, part: int, parts: int) -> None:
    """Every ``parts``-th of the fleet's Hosts and Secrets from ``part`` on, written from a
    process of its own, as ``create_fleet`` writes them (the Secret, then the Host)."""
    fleet = KubeCluster.from_kubeconfig(kubeconfig)
    for index in range(part, n, parts):
        host = host_manifest(NS, index)
        name = host["metadata"]["name"]
        fleet.create(SECRETS, secret_manifest(NS, f"{name}-bmc", "admin", f"pw-{index}"))
        fleet.create(HOSTS, host)
    fleet.close()


@dataclass
class Row:
    replicas: int
    created: float
    provisioned: float
    peaks_mb: list[float]
    shares: list[int]
    requests_per_host: Counts
    writes_per_host: float
    label_patches_per_host: float
    server_writes_per_host: float  # kube-apiserver's count, the creator's taken off
    at_rest: float  # writes per second at rest, kube-apiserver's count
    at_rest_seen: float  # requests per second at rest, the replicas' own count
    plane: PlaneUse  # the control plane's and the machine's, creation to settled


class Run:
    def __init__(self, args: argparse.Namespace, count: int, failover: bool) -> None:
        self.args = args
        self.count = count
        self.failover = failover
        self.n = args.hosts
        self.replicas: dict[str, Replica] = {}
        self.gone: list[Replica] = []  # killed ones, kept for their figures
        self.creators: list[Any] = []

    def start(self, name: str) -> Replica:
        replica = Replica(name, self.workdir, self.kubeconfig, self.args)
        self.replicas[name] = replica
        return replica

    def leases_held(self, names: list[str], timeout: float = 60.0) -> None:
        for name in names:
            wait(lambda: lease_holder(self.admin, LEASE_PREFIX + name).startswith(f"{name}_"),  # noqa: B023
                 f"{name}'s Lease held", timeout=timeout, poll=0.5,
                 meanwhile=sampled(self.replicas))  # fmt: skip

    def __call__(self) -> Row:
        self.workdir = Path(tempfile.mkdtemp(prefix=f"shard-scale-{self.count}-"))
        ok = False
        try:
            with control_plane("shard-scale", self.workdir / "plane") as plane:
                self.plane = plane
                self.kubeconfig = plane.kubeconfig
                self.admin = KubeCluster.from_kubeconfig(str(plane.kubeconfig))
                self.fleet = Fleet(self.admin)
                try:
                    row = self.provision(plane.url)
                    if self.failover:
                        self.fail_over()
                    ok = True
                    return row
                finally:
                    for creator in self.creators:
                        if creator.is_alive():
                            creator.kill()
                            creator.join(5)
                    for replica in self.replicas.values():
                        replica.kill()
                    self.fleet.informer.stop()
                    self.admin.close()
        finally:
            if ok:
                shutil.rmtree(self.workdir, ignore_errors=True)
            else:
                print(f"  (logs kept in {self.workdir})", flush=True)

    # -- provisioning ----------------------------------------------------------------------

    def provision(self, url: str) -> Row:
        n, count = self.n, self.count
        names = [f"r{i}" for i in range(count)]
        lease = self.args.lease_duration
        renew, retry = election_periods(lease)
        print(
            f"\n== {count} replica(s), {n} hosts, timings {self.args.timings}, Lease {lease}s "
            f"(renew deadline {renew}s, retry {retry}s), {self.args.workers} workers each; "
            f"kube-apiserver {url}",
            flush=True,
        )
        for name in names:
            self.start(name)
        self.leases_held(names)
        sharder = wait(lambda: lease_holder(self.admin, SHARDER_LEASE), "the sharder's Lease held",
                       timeout=60, poll=0.5, meanwhile=sampled(self.replicas))  # fmt: skip
        self.fleet.informer.start()
        if not self.fleet.informer.wait_synced(60):
            raise Failed("the watch of the Hosts did not sync")
        before = scrape_all(self.replicas)
        server_before = server_writes(self.plane)
        plane_before = PlaneUse.now(self.plane)
        offsets = {name: r.log_offset() for name, r in self.replicas.items()}

        began = time.monotonic()
        parts = self.args.creators
        self.creators = [
            mp.get_context("spawn").Process(
                target=create, args=(str(self.kubeconfig), n, part, parts)
            )
            for part in range(parts)
        ]
        for creator in self.creators:
            creator.start()
        created: list[float] = []

        def all_provisioned() -> bool:
            if not created and not any(c.is_alive() for c in self.creators):
                if any(c.exitcode != 0 for c in self.creators):
                    codes = [c.exitcode for c in self.creators]
                    raise Failed(f"creating the fleet failed (exit codes {codes})")
                created.append(time.monotonic() - began)
            return bool(created) and self.fleet.provisioned() == n

        wait(all_provisioned, "every host provisioned", timeout=self.args.timeout, poll=0.5,
             meanwhile=sampled(self.replicas),
             progress=lambda: f"{len(self.fleet.owners())} created, "
                              f"{self.fleet.provisioned()} provisioned")  # fmt: skip
        provisioned = time.monotonic() - began

        def settled() -> dict[str, int] | None:
            labels = Counter(self.fleet.owners().values())
            shown = shard_members(self.admin)
            return shown if shown == {k: labels[k] for k in names} else None

        shares = wait(settled, "the controller's status showing every share", timeout=60,
                      poll=1.0, meanwhile=sampled(self.replicas))  # fmt: skip
        plane_use = PlaneUse.since(self.plane, plane_before)
        after = scrape_all(self.replicas)
        server = minus(server_writes(self.plane), server_before)
        server = minus(server, {"POST hosts": n, "POST secrets": n})  # the creator's
        label_patches = 2 * sum(r.assigned_since(offsets[k]) for k, r in self.replicas.items())
        seen_rate, rate = self.at_rest(self.replicas)

        print(
            f"  created in {created[0]:.1f}s ({n / created[0]:.0f} hosts/s); every host "
            f"provisioned {provisioned:.1f}s after creation began ({n / provisioned:.0f} hosts/s); "
            f"the sharder: {sharder.split('_', 1)[0]}"
        )
        requests: Counts = {}
        for name in names:
            replica, mine = self.replicas[name], minus(after[name].requests, before[name].requests)
            add(requests, mine)
            hosts = shares[name]
            print(
                f"  {name}: {hosts} hosts, peak RSS {replica.peak_kb / 1024:.0f} MB, "
                f"CPU {replica.cpu:.1f}s, API requests per host of its own: "
                f"{by_method(mine, max(hosts, 1))} (writes {writes(mine) / max(hosts, 1):.2f})"
            )
        print(
            f"  all replicas, per host: {by_method(requests, n)}; writes {writes(requests) / n:.2f}"
        )
        print(
            f"  kube-apiserver's count of writes per host (the creator's taken off): "
            f"{sum(server.values()) / n:.2f}: {by_resource(server, n)}; of which the sharder's "
            f"label patches {label_patches / n:.2f}"
        )
        print(f"  from creation to settled: {plane_use}")
        print(
            f"  at rest afterwards: {sum(rate.values()):.1f} writes/s ({by_resource(rate)}) by "
            f"kube-apiserver's count; {sum(seen_rate.values()):.1f} requests/s in the replicas' "
            "metrics"
        )
        return Row(
            replicas=count,
            created=created[0],
            provisioned=provisioned,
            peaks_mb=[self.replicas[k].peak_kb / 1024 for k in names],
            shares=[shares[k] for k in names],
            requests_per_host={k: v / n for k, v in requests.items()},
            writes_per_host=writes(requests) / n,
            label_patches_per_host=label_patches / n,
            server_writes_per_host=sum(server.values()) / n,
            at_rest=sum(rate.values()),
            at_rest_seen=sum(seen_rate.values()),
            plane=plane_use,
        )

    def at_rest(self, replicas: dict[str, Replica]) -> tuple[dict[str, float], dict[str, float]]:
        """Requests per second at rest: the replicas' own count (by method), and
        kube-apiserver's count of writes (by verb and resource)."""
        began, seen, server = (
            time.monotonic(),
            total(scrape_all(replicas)),
            server_writes(self.plane),
        )
        time.sleep(AT_REST)
        seen_after, server_after = total(scrape_all(replicas)), server_writes(self.plane)
        spent = time.monotonic() - began
        return (
            {k: v / spent for k, v in minus(seen_after, seen).items()},
            {k: v / spent for k, v in minus(server_after, server).items()},
        )

    # -- failover --------------------------------------------------------------------------

    def fail_over(self) -> None:
        lease = self.args.lease_duration
        target = 2 * lease + SHARDER_RESYNC
        print(
            f"  failover (target: twice the Lease {lease}s + the sharder's resync "
            f"{SHARDER_RESYNC:.0f}s = {target:.0f}s after the last renew)",
            flush=True,
        )
        lead = lease_holder(self.admin, SHARDER_LEASE).split("_", 1)[0]
        others = sorted(name for name in self.replicas if name != lead)
        self.kill_and_return(others[-1], sharder=False)
        lead = lease_holder(self.admin, SHARDER_LEASE).split("_", 1)[0]
        self.kill_and_return(lead, sharder=True)

    def kill_and_return(self, victim: str, *, sharder: bool) -> None:
        lease = self.args.lease_duration
        survivors = {k: r for k, r in self.replicas.items() if k != victim}
        # the requests at rest, to tell the rebalance's own from the background
        seen_rate, rate = self.at_rest(survivors)
        theirs = {k for k, v in self.fleet.owners().items() if v == victim}
        offsets = {k: r.log_offset() for k, r in survivors.items()}
        before, server_before = total(scrape_all(survivors)), server_writes(self.plane)

        killed = self.replicas.pop(victim)
        killed.kill()
        began = time.monotonic()
        what = "the sharder's holder" if sharder else "not the sharder's holder"
        print(f"  kill -9 {victim} ({what}, {len(theirs)} hosts)", flush=True)
        marks: dict[str, float] = {}

        def mark(name: str) -> None:
            marks.setdefault(name, time.monotonic() - began)

        def moved_and_reconciled() -> bool:
            if "lease taken" not in marks and lease_holder(
                self.admin, LEASE_PREFIX + victim
            ).startswith("sharder/"):
                mark("lease taken")
            if sharder and lease_holder(self.admin, SHARDER_LEASE).split("_", 1)[0] in survivors:
                mark("sharder")
            owners = self.fleet.owners()
            moved = {k for k in theirs if owners.get(k) in survivors}
            if moved:
                mark("first moved")
            if len(moved) < len(theirs):
                return False
            mark("all moved")
            books = scrape_all(survivors)
            return all(k in books[owners[k]].books for k in theirs) and (
                not sharder or "sharder" in marks
            )

        wait(moved_and_reconciled, f"{victim}'s hosts moved and reconciled",
             timeout=2 * lease + 120, poll=0.5, meanwhile=sampled(self.replicas))  # fmt: skip
        done = time.monotonic() - began
        after, server_after = total(scrape_all(survivors)), server_writes(self.plane)
        spent = time.monotonic() - began  # the window the requests were counted over
        cost, server = minus(after, before), minus(server_after, server_before)
        beyond = {k: v - seen_rate.get(k, 0.0) * spent for k, v in cost.items()}
        assigned = sum(r.assigned_since(offsets[k]) for k, r in survivors.items())
        shown = ", ".join(
            f"{label} {marks[label]:.1f}s"
            for label in ("lease taken", "sharder", "first moved", "all moved")
            if label in marks
        )
        print(
            f"    every host of {victim} with a live shard and reconciled by it: {done:.1f}s "
            f"after the kill (target {2 * lease + SHARDER_RESYNC:.0f}s); {shown}"
        )
        print(
            f"    writes over the {spent:.1f}s by kube-apiserver's count: "
            f"{by_resource(server, digits=0)} (at rest before the kill, per second: "
            f"{by_resource(rate, digits=1)}); the sharder assigned {assigned} hosts "
            f"({2 * assigned} label patches)"
        )
        print(
            f"    the survivors' own count of their requests: {by_method(cost, digits=0)}; beyond "
            f"their rate at rest: {by_method(beyond, digits=0)}"
        )

        # back under its name
        replica = self.start(victim)
        began = time.monotonic()
        self.leases_held([victim], timeout=4 * lease + 60)
        held = time.monotonic() - began
        ring = Ring.of(self.replicas)
        keys = list(self.fleet.owners())
        mine = {k for k in keys if ring.owner(k) == victim}

        def back() -> bool:
            owners = self.fleet.owners()
            if any(owners.get(k) != victim for k in mine):
                return False
            return mine <= replica.scrape().books

        try:
            wait(back, f"{victim}'s hosts back", timeout=120, poll=0.5,
                 meanwhile=sampled(self.replicas))  # fmt: skip
            came = f"all {len(mine)} back with it and reconciled {time.monotonic() - began:.1f}s"
        except TimedOut:
            owners = self.fleet.owners()
            count = sum(1 for k in mine if owners.get(k) == victim)
            came = f"only {count} of the {len(mine)} the ring gives it back after 120s"
        placed = sum(1 for k, v in self.fleet.owners().items() if ring.owner(k) == v)
        print(
            f"    {victim} started again: its Lease held {held:.1f}s after the start; {came} "
            f"after it; {placed} of {len(keys)} hosts where the ring puts them"
        )
        wait(lambda: self.fleet.provisioned() == self.n, "every host provisioned still",
             timeout=60, poll=0.5, meanwhile=sampled(self.replicas))  # fmt: skip


# -- main ----------------------------------------------------------------------------------


def table(rows: list[Row]) -> None:
    """One row per replica count. writes/host: kube-apiserver's count (the sharder's label
    patches in it), then the replicas' own (rest_client_requests_total); at rest: writes/s
    by kube-apiserver's count; requests/host: the replicas' own count, by method."""
    print(
        f"\n{'replicas':>8}  {'created':>8}  {'provisioned':>11}  {'peak RSS MB each':<20}  "
        f"{'hosts each':<20}  {'writes/host (labels) own':<24}  {'rest w/s':>8}  "
        "requests/host (own count)"
    )
    for row in rows:
        peaks = "/".join(f"{p:.0f}" for p in row.peaks_mb)
        shares = "/".join(str(s) for s in row.shares)
        written = (
            f"{row.server_writes_per_host:.2f} ({row.label_patches_per_host:.2f}) "
            f"{row.writes_per_host:.2f}"
        )
        print(
            f"{row.replicas:>8}  {row.created:7.1f}s  {row.provisioned:10.1f}s  {peaks:<20}  "
            f"{shares:<20}  {written:<24}  {row.at_rest:8.1f}  {by_method(row.requests_per_host)}"
        )
    print(
        f"\n{'replicas':>8}  {'kube-apiserver':>14}  {'etcd':>11}  {'etcd db':>7}  "
        f"{'machine busy':>12}   (peak RSS MB, CPU s from creation to settled)"
    )
    for row in rows:
        use, api, etcd = row.plane, "kube-apiserver", "etcd"
        print(
            f"{row.replicas:>8}  {use.peak_mb[api]:5.0f} {use.cpu[api]:7.0f}s  "
            f"{use.peak_mb[etcd]:4.0f} {use.cpu[etcd]:5.0f}s  {use.etcd_mb:5.0f}MB  "
            f"{use.busy:12.0%}"
        )


def interrupted(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--replicas", default="1,3,5", help="replica counts, one run each")
    parser.add_argument("--timings", choices=TIMINGS, default="zero")
    parser.add_argument("--lease-duration", type=int, default=15, help="whole seconds, >= 3")
    parser.add_argument("--workers", type=int, default=4, help="per replica")
    parser.add_argument(
        "--creators", type=int, default=1, help="processes creating the fleet, each a share"
    )
    parser.add_argument("--failover", action="store_true")
    parser.add_argument("--timeout", type=float, default=600, help="seconds to provision")
    args = parser.parse_args()
    counts = [int(c) for c in args.replicas.split(",") if c.strip()]
    if not counts or min(counts) < 1 or args.lease_duration < 3 or args.hosts < 1:
        parser.error("--replicas: counts of 1 or more; --lease-duration: 3 or more")
    signal.signal(signal.SIGTERM, interrupted)  # stopped as by Ctrl-C: everything cleaned up
    largest = max(counts)
    rows: list[Row] = []
    try:
        for count in counts:
            rows.append(Run(args, count, args.failover and count == largest >= 2)())
    except Failed as err:
        print(f"failed: {err}", file=sys.stderr)
        table(rows)
        return 1
    except KeyboardInterrupt:
        print("interrupted; everything stopped", file=sys.stderr)
        table(rows)
        return 130
    if args.failover and largest < 2:
        print("--failover: needs a replica count of 2 or more")
    table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
