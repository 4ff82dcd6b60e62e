"""``kubectl hoststate``: its renderings of HostStates and NodePools as a person reads
them (dicts in, text out, at a fixed clock), its arguments, and its errors; no cluster.
tests/cluster/test_plugin_on_kube.py runs the installed executable on a real one."""

from __future__ import annotations

import argparse
import itertools
from typing import Any

import pytest

from state_controller.api.timefmt import parse_rfc3339, rfc3339_ms
from state_controller.cluster.interface import NotFound
from state_controller.plugin import eta, history, main, reading, why
from state_controller.plugin.clock import columns, relative, span
from state_controller.updates import signals

NOW = parse_rfc3339("2026-11-28T23:50:00Z") or 0.0


def at(minutes_ago: float) -> str:
    return rfc3339_ms(NOW - minutes_ago * 60)


def condition(type_: str, status: str, reason: str, message: str = "", ago: float = 5) -> dict:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": at(ago),
    }


def draining_host(estimate: bool = True) -> dict[str, Any]:
    """A provisioned machine 41 minutes into the drain of its node update."""
    status: dict[str, Any] = {
        "phase": "Updating",
        "provisioning": {"state": "provisioned", "enteredAt": at(300)},
        "update": {
            "step": "draining",
            "enteredAt": at(41),
            "startedAt": at(45),
            "message": "evicting 3 pods: web-0 (PodDisruptionBudget web allows 0)",
        },
        "conditions": [
            condition("Ready", "False", "Updating", "draining: evicting 3 pods", 45),
            condition("Progressing", "True", "Updating"),
            condition("Stuck", "True", "StepTooLong", "draining for 41m0s (limit 30m0s)", 11),
            condition("Slow", "True", "SlowerThanUsual", "in draining since …", 29),
            condition("Degraded", "False", "AsExpected"),
            condition("Provisioned", "True", "Provisioned"),
            condition("Cordoned", "True", "UpdateCompleted"),
            condition("Drained", "Unknown", "UpdateInProgress"),
            condition("UpdateComplete", "False", "NotYetOccurred"),
            condition("NodeDegraded", "False", "AsExpected"),
        ],
    }
    if estimate:
        status["estimate"] = {
            "kind": "update",
            "step": "draining",
            "enteredAt": at(41),
            "stepEndsAt": at(38),
            "stepLateAt": at(29),
            "endsAt": at(25),
            "lateAt": at(14),
            "endsBy": "23:25",
            "lateBy": "23:36",
            "samples": 240,
            "basis": "pool worker, Dell Inc. PowerEdge R750",
        }
    return {
        "apiVersion": "hoststate.io/v1alpha1",
        "kind": "HostState",
        "metadata": {"name": "rack12-worker-0042", "namespace": "metal"},
        "spec": {"host": "rack12-worker-0042", "node": "rack12-worker-0042"},
        "status": status,
    }


def long_history(updates: int = 12) -> dict[str, Any]:
    """A machine provisioned five days ago, then updated ``updates`` times, one a day or
    so; its history keeps the last 50 transitions, 19 older ones dropped."""
    chapters = [
        {"name": "registration", "startedAt": at(7200), "endedAt": at(7199),
         "outcome": "registered", "transitions": 2},
        {"name": "inspection", "startedAt": at(7199), "endedAt": at(7190),
         "outcome": "inspected", "transitions": 1},
        {"name": "provisioning", "startedAt": at(7180), "transitions": 2},
    ]  # fmt: skip
    records = [
        ("registration", "", "registering", 7200, "Registering", "registering with the BMC"),
        ("registration", "registering", "inspecting", 7199, "Registered", "BMC answered"),
        ("inspection", "inspecting", "preparing", 7190, "Inspected", "32 cores, 256 GiB"),
        ("provisioning", "available", "provisioning", 7180, "Provisioning", "image ok"),
        ("provisioning", "provisioning", "provisioned", 7170, "Provisioned", ""),
    ]
    steps = ["updated", "update pending", "preparing update", "draining", "applying update"]
    steps += ["rebooting", "resuming", "updated"]
    for n in range(updates):
        start = 7000 - n * 500
        chapters.append(
            {"name": "update", "startedAt": at(start), "endedAt": at(start - 70),
             "outcome": "completed", "transitions": 7}
        )  # fmt: skip
        for i, (frm, to) in enumerate(itertools.pairwise(steps)):
            records.append(("update", frm, to, start - 10 * i, "UpdateStep", f"{n}: {to}\nok"))
    history_ = [
        {"seq": seq, "chapter": c, "from": f, "to": t, "at": at(m), "reason": r, "message": msg}
        for seq, (c, f, t, m, r, msg) in enumerate(records, start=1)
    ]
    return {
        "metadata": {"name": "rack12-worker-0042", "namespace": "metal"},
        "status": {
            "phase": "Provisioned",
            "chapters": chapters[-20:],
            "history": history_[-50:],
            "historyDropped": len(history_[:-50]),
        },
    }


# -- time words -------------------------------------------------------------------------


def test_spans_read_as_kubectl_prints_ages() -> None:
    assert [span(s) for s in (0, 45, 119, 120, 2460, 3600, 3 * 3600 + 300, 2 * 86400 + 7200)] == [
        "0s", "45s", "119s", "2m", "41m", "1h", "3h5m", "2d2h",
    ]  # fmt: skip
    assert relative(NOW + 720, NOW) == "in 12m"
    assert relative(NOW - 2460, NOW) == "41m ago"
    assert relative(NOW + 0.4, NOW) == "now"


def test_columns_are_plain_text_aligned_with_the_last_unpadded() -> None:
    assert columns([["a", "bb", "c"], ["ccc", "d", "e"]], indent="  ") == [
        "  a    bb  c",
        "  ccc  d   e",
    ]


# -- why ------------------------------------------------------------------------------------


def test_why_says_the_step_its_age_and_how_it_compares_with_machines_like_it() -> None:
    text = why.render(draining_host(), NOW)
    lines = text.splitlines()
    assert lines[0] == (
        "HostState metal/rack12-worker-0042: phase Updating "
        "(Host metal/rack12-worker-0042, Node rack12-worker-0042)"
    )
    assert "update step draining, entered 2026-11-28 23:09:00Z (41m ago)" in text
    assert "evicting 3 pods: web-0 (PodDisruptionBudget web allows 0)" in text
    assert (
        "draining for 41m; on machines like it (pool worker, Dell Inc. PowerEdge R750) "
        "draining takes 3m usually and ends by 12m at the latest, from 240 past durations of it"
    ) in text
    assert "slower than usual: 29m past its late bound (2026-11-28 23:21:00Z)" in text
    assert "the whole update: expected to end 2026-11-28 23:25:00Z (25m ago)" in text
    assert "late after 2026-11-28 23:36:00Z (14m ago)" in text
    # the conditions not OK, and only those: not Progressing, not a step not yet done
    listed = [line.split()[0] for line in text.split("conditions not OK:\n")[1].splitlines()]
    assert listed == ["Ready", "Stuck", "Slow"]


def test_why_within_the_usual_says_when_the_step_should_end() -> None:
    host = draining_host()
    host["status"]["update"]["enteredAt"] = host["status"]["estimate"]["enteredAt"] = at(2)
    host["status"]["estimate"].update(stepEndsAt=at(-3), stepLateAt=at(-10))
    text = why.render(host, NOW)
    assert "draining for 2m;" in text
    assert "as usual: expected to end in 3m (2026-11-28 23:53:00Z)" in text
    host["status"]["estimate"].update(stepEndsAt=at(1))
    assert "past its usual end (60s ago), within its late bound" in why.render(host, NOW)


def test_why_without_an_estimate_says_why_and_gives_no_number() -> None:
    text = why.render(draining_host(estimate=False), NOW)
    estimate = text.split("\nestimate:")[1].split("conditions not OK")[0]
    assert "no estimate: fewer than 5 past durations of draining are known" in estimate
    assert not any(ch.isdigit() for ch in estimate.replace("fewer than 5", ""))


def test_why_of_a_machine_at_rest_or_waiting_says_nothing_is_timed() -> None:
    resting = {
        "metadata": {"name": "h", "namespace": "metal"},
        "status": {
            "phase": "Provisioned",
            "provisioning": {"state": "provisioned", "enteredAt": at(90)},
            "update": {"step": "updated", "enteredAt": at(60)},
            "conditions": [condition("Ready", "True", "Provisioned")],
        },
    }
    text = why.render(resting, NOW)
    assert "provisioning state provisioned, entered 2026-11-28 22:20:00Z (1h30m ago)" in text
    assert "no estimate: nothing is under way" in text
    assert "conditions not OK: none" in text
    waiting = resting | {"status": resting["status"] | {"servicing": {"step": "service pending"}}}
    assert "no estimate: it waits for its turn" in why.render(waiting, NOW)


def test_why_of_a_failing_registration_shows_its_errors() -> None:
    failing = {
        "metadata": {"name": "h", "namespace": "metal"},
        "status": {
            "phase": "Registering",
            "provisioning": {
                "state": "registering",
                "enteredAt": at(20),
                "errorType": "registration error",
                "errorMessage": "BMC bmc-0044.invalid did not answer",
                "errorCount": 7,
            },
            "conditions": [
                condition("Registered", "False", "RegistrationFailed", "BMC did not answer"),
                condition("Inspected", "False", "NotYetOccurred"),
            ],
        },
    }
    text = why.render(failing, NOW)
    assert "provisioning state registering, entered" in text
    assert "7 (registration error): BMC bmc-0044.invalid did not answer" in text
    assert "no estimate: fewer than 5 past durations of registering" in text
    listed = [line.split()[0] for line in text.split("conditions not OK:\n")[1].splitlines()]
    assert listed == ["Registered"]


# -- history --------------------------------------------------------------------------------


def test_history_puts_each_transition_under_its_chapter_oldest_first() -> None:
    text = history.render(long_history(updates=2), NOW, limit=0)
    lines = text.splitlines()
    headings = [line for line in lines[1:] if line and not line.startswith(" ")]
    assert [h.split(":")[0] for h in headings[:-1]] == [
        "registration", "inspection", "provisioning", "update", "update",
    ]  # fmt: skip
    assert headings[0] == (
        "registration: started 2026-11-23 23:50:00Z (5d ago), ended 2026-11-23 23:51:00Z "
        "(4d23h ago), outcome registered, 2 transitions"
    )
    assert headings[2].endswith("not ended, 2 transitions")
    first_update = lines.index(headings[3])
    assert lines[first_update + 1].split("  ")[1:3] == ["2026-11-24 03:10:00Z", "4d20h ago"]
    assert "updated -> update pending" in lines[first_update + 1]
    assert "UpdateStep" in lines[first_update + 1]
    assert "0: update pending ok" in lines[first_update + 1]  # one line, however written
    # the second update's transitions under the second heading, not the first
    second = lines.index(headings[4])
    assert all("  1: " in line for line in lines[second + 1 : second + 8])
    assert not any("  1: " in line for line in lines[:second])
    assert lines[-1] == "shown: 19 of the 19 transitions kept"


def test_a_long_history_is_bounded_by_limit_and_says_what_is_left_out() -> None:
    obj = long_history(updates=12)
    assert len(obj["status"]["history"]) == 50
    text = history.render(obj, NOW, limit=10)
    assert text.count(" -> ") == 10
    # the chapters of the window: the updates of the last ten, and provisioning, not ended
    assert [h.split(":")[0] for h in text.splitlines()[1:-1] if h and h[0] != " "] == [
        "provisioning", "update", "update",
    ]  # fmt: skip
    assert "not ended, 2 transitions\n  (no transition of it in the window shown)" in text
    assert text.splitlines()[-1] == (
        "shown: 10 of the 50 transitions kept; 40 earlier not shown (--limit 0 and no "
        "--since shows all kept); 39 older ones fell off the bounded history (historyDropped)"
    )
    # the default is the controller's own bound
    assert history.render(obj, NOW).count(" -> ") == history.DEFAULT_LIMIT


def test_history_since_keeps_the_transitions_after_it() -> None:
    obj = long_history(updates=12)
    since = NOW - 2600 * 60  # the last three updates began after it
    text = history.render(obj, NOW, since=since, limit=0)
    assert text.count(" -> ") == 3 * 7
    assert text.count("\nupdate: ") == 3


def test_a_transition_whose_chapter_summary_fell_off_is_still_shown() -> None:
    obj = long_history(updates=2)
    obj["status"]["chapters"] = obj["status"]["chapters"][3:]  # only the updates kept
    text = history.render(obj, NOW, limit=0)
    assert "registration: an earlier chapter (its summary is no longer kept)" in text
    assert text.count(" -> ") == 19


def test_history_of_a_new_host_says_nothing_happened_yet() -> None:
    obj = {"metadata": {"name": "h", "namespace": "metal"}, "status": {}}
    assert history.render(obj, NOW).splitlines()[1] == "no transitions recorded yet"


# -- eta ------------------------------------------------------------------------------------


def rollout(late: bool) -> dict[str, Any]:
    """Pool ``worker`` 40 minutes into its rollout: said at first to end 25 minutes from
    now (late after 40); now expected ``late`` past that bound, or as first said."""
    ends, lateat = (-55, -65) if late else (-25, -40)
    conditions = [
        condition(
            "OnSchedule",
            "False" if late else "True",
            "RolloutLate" if late else "WithinEstimate",
            f"expected to end at {at(ends)}, "
            + ("after" if late else "within")
            + f" the late bound first said ({at(-40)})",
            ago=3,
        )
    ]
    return {
        "metadata": {"name": "worker"},
        "spec": {"label": "node-role.kubernetes.io/*"},
        "status": {
            "desiredConfig": "rendered-worker-2",
            "machineCount": 12,
            "updatedMachineCount": 7,
            "updatingMachineCount": 2,
            "degradedMachineCount": 1,
            "estimate": {
                "endsAt": at(ends),
                "lateAt": at(lateat),
                "endsBy": "00:15",
                "madeAt": at(3),
                "machinesLeft": 5,
                "atOnce": 2,
                "machineSeconds": 725.0,
                "samples": 40,
                "firstEndsAt": at(-25),
                "firstLateAt": at(-40),
            },
            "conditions": conditions,
        },
    }


def updating_host(name: str, step: str, ends_in: float | None) -> dict[str, Any]:
    status: dict[str, Any] = {"update": {"step": step, "enteredAt": at(4)}}
    if ends_in is not None:
        status["estimate"] = {
            "kind": "update", "step": step, "enteredAt": at(4), "stepEndsAt": at(1),
            "stepLateAt": at(-3), "endsAt": at(-ends_in), "lateAt": at(-ends_in - 5),
            "samples": 40, "basis": "pool worker, Dell Inc. PowerEdge R750",
        }  # fmt: skip
    return {
        "metadata": {"name": name, "namespace": "metal"},
        "spec": {"node": name},
        "status": status,
    }


def test_eta_of_a_rollout_on_schedule() -> None:
    hosts = [updating_host("w-01", "draining", 9), updating_host("w-02", "rebooting", 3)]
    text = eta.render(rollout(late=False), hosts, NOW)
    assert "machines:     12 in the pool, 7 updated, 2 updating, 1 degraded" in text
    assert (
        "ends:         2026-11-29 00:15:00Z (in 25m), late after 2026-11-29 00:30:00Z (in 40m)"
    ) in text
    assert "5 machines left, 2 at once, 12m per machine" in text
    assert "from 40 past durations; made 3m ago" in text
    assert "on schedule:  yes (WithinEstimate since 2026-11-28 23:47:00Z (3m ago))" in text
    table = text.split("machines updating: 2\n")[1].splitlines()
    assert table[0].split() == [
        "HOSTSTATE", "NODE", "STEP", "IN", "STEP", "ENDS", "LATE", "AFTER", "ESTIMATE",
    ]  # fmt: skip
    assert [row.split()[0] for row in table[1:]] == ["metal/w-01", "metal/w-02"]  # ends last first
    assert "in 9m" in table[1] and "in 14m" in table[1] and "as usual; 40 samples" in table[1]


def test_eta_of_a_late_rollout_says_it_is_late_and_why() -> None:
    text = eta.render(rollout(late=True), [], NOW)
    assert "ends:         2026-11-29 00:45:00Z (in 55m), late after 2026-11-29 00:55:00Z" in text
    assert "first said:   2026-11-29 00:15:00Z, late after 2026-11-29 00:30:00Z" in text
    assert (
        "on schedule:  no, late (RolloutLate since 2026-11-28 23:47:00Z (3m ago)): expected "
        "to end at 2026-11-29T00:45:00.000Z, after the late bound first said"
    ) in text
    assert text.endswith("machines updating: none\n")


def test_eta_without_an_estimate_says_why_and_gives_no_number() -> None:
    pool = rollout(late=False)
    del pool["status"]["estimate"]
    pool["status"]["conditions"] = []
    hosts = [updating_host("w-01", "draining", None)]
    text = eta.render(pool, hosts, NOW)
    assert "ends:         no estimate: too few whole updates of this pool's machines" in text
    assert "on schedule:  not said (no OnSchedule condition" in text
    assert text.splitlines()[-1].split()[-2:] == ["no", "estimate"]
    pool["status"].update(updatedMachineCount=12, updatingMachineCount=0, degradedMachineCount=0)
    assert "no estimate: no rollout under way (all 12 machines are updated)" in eta.render(
        pool, [], NOW
    )


def test_eta_lists_at_most_limit_machines() -> None:
    hosts = [updating_host(f"w-{i:02d}", "draining", i) for i in range(30)]
    text = eta.render(rollout(late=False), hosts, NOW, limit=5)
    assert "machines updating: 30" in text
    assert text.count("metal/w-") == 5 and "metal/w-29" in text  # the last to end first
    assert text.splitlines()[-1] == "  … and 25 more (--limit 0 lists them all)"


def test_the_pools_machines_are_those_its_label_puts_in_it() -> None:
    def node(name: str, labels: dict[str, str]) -> dict[str, Any]:
        return {"metadata": {"name": name, "labels": labels}}

    nodes = [
        node("w-01", {"node-role.kubernetes.io/worker": ""}),
        node("i-01", {"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/infra": ""}),
        node("bare", {}),
    ]
    worker = rollout(late=False)
    assert eta.pool_nodes(worker, nodes) == {"w-01"}
    unlabeled = {"metadata": {"name": "unlabeled"}, "spec": {}}
    assert eta.pool_nodes(unlabeled, nodes) == {"bare"}
    racks = {"metadata": {"name": "r1"}, "spec": {"label": "example.com/rack"}}
    assert eta.pool_nodes(racks, [node("x", {"example.com/rack": "r1"}), *nodes]) == {"x"}
    states = [
        updating_host("w-01", "draining", 3),
        updating_host("i-01", "draining", 3),
        updating_host("w-01b", "updated", None) | {"spec": {"node": "w-01"}},
    ]
    assert [s["metadata"]["name"] for s in eta.updating(states, {"w-01"})] == ["w-01"]


def mcn(node: str, pool: str) -> dict[str, Any]:
    return {"metadata": {"name": node}, "spec": {"node": {"name": node}, "pool": {"name": pool}}}


def test_a_machineconfignode_s_pool_wins_over_the_node_s_labels_as_in_the_controller() -> None:
    """On OpenShift a custom-pool Node keeps the worker label; its MachineConfigNode names
    the pool the Machine Config Operator chose, and so does the controller
    (NodeSignals.pool); "not-yet-set" is no pool, so the labels decide."""
    nodes = [
        {"metadata": {"name": "w-01", "labels": {"node-role.kubernetes.io/worker": ""}}},
        {"metadata": {"name": "g-01", "labels": {"node-role.kubernetes.io/worker": ""}}},
        {"metadata": {"name": "n-01", "labels": {"node-role.kubernetes.io/worker": ""}}},
    ]
    mcns = [mcn("g-01", "gpu"), mcn("n-01", "not-yet-set")]
    worker = rollout(late=False)
    gpu = {"metadata": {"name": "gpu"}, "spec": {}}
    assert eta.pool_nodes(worker, nodes, mcns) == {"w-01", "n-01"}
    assert eta.pool_nodes(gpu, nodes, mcns) == {"g-01"}
    for name in ("w-01", "g-01", "n-01"):
        want = "gpu" if name == "g-01" else "worker"
        assert signals.node_signals(nodes_by_name(nodes)[name]).role_pool == "worker"
        assert eta.node_pools(worker, nodes, mcns)[name] == want


def nodes_by_name(nodes: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {n["metadata"]["name"]: n for n in nodes}


def test_eta_takes_the_pool_the_controller_recorded_in_the_hoststate() -> None:
    """status.inventory.pool is the controller's own choice: it wins over what the Node's
    labels and MachineConfigNode show now; a HostState without inventory falls back."""
    nodes = [{"metadata": {"name": n, "labels": {"node-role.kubernetes.io/worker": ""}}}
             for n in ("a", "b", "c", "d")]  # fmt: skip
    recorded = updating_host("a", "draining", 3)
    recorded["status"]["inventory"] = {"source": "Node", "pool": "gpu"}
    no_pool = updating_host("b", "draining", 3)
    no_pool["status"]["inventory"] = {"source": "Node"}  # in none: the unlabeled pool
    older = updating_host("c", "draining", 3)  # no inventory: the Node's MCN says gpu
    plain = updating_host("d", "draining", 3)  # no inventory, no MCN: its labels
    states = [recorded, no_pool, older, plain]
    mcns = [mcn("c", "gpu")]

    def names(pool: str) -> list[str]:
        chosen = eta.in_pool({"metadata": {"name": pool}, "spec": {}}, states, nodes, mcns)
        return [s["metadata"]["name"] for s in chosen]

    assert names("gpu") == ["a", "c"]
    assert names("worker") == ["d"]
    assert names("unlabeled") == ["b"]


class Fleet:
    """A cluster with one pool, HostStates, Nodes, and MachineConfigNodes or none."""

    def __init__(self, states: list[Any], nodes: list[Any], mcns: list[Any] | None) -> None:
        self.objects = {"hoststates": states, "nodes": nodes, "machineconfignodes": mcns}
        self.listed: list[str] = []

    def get(self, resource: Any, namespace: str | None, name: str) -> Any:
        return {"metadata": {"name": name}, "spec": {}, "status": {"machineCount": 2}}

    def list(self, resource: Any, namespace: str | None) -> Any:
        self.listed.append(resource.plural)
        found = self.objects[resource.plural]
        if found is None:
            raise NotFound("the server could not find the requested resource")
        return found, "1"

    def close(self) -> None:
        pass


@pytest.mark.parametrize("served", [True, False])
def test_eta_run_reads_machineconfignodes_only_when_a_hoststate_records_no_pool(
    monkeypatch: pytest.MonkeyPatch, served: bool
) -> None:
    nodes = [{"metadata": {"name": n, "labels": {"node-role.kubernetes.io/worker": ""}}}
             for n in ("a", "b")]  # fmt: skip
    states = [updating_host("a", "draining", 3), updating_host("b", "draining", 3)]
    fleet = Fleet(states, nodes, [mcn("a", "gpu")] if served else None)
    monkeypatch.setattr(reading.Target, "connect", lambda self: fleet)
    args = argparse.Namespace(pool="gpu", limit=20)
    text = eta.run(args, reading.Target(), NOW)
    assert fleet.listed == ["hoststates", "nodes", "machineconfignodes"]
    assert (
        ("machines updating: 1" in text and "metal/a" in text)
        if served
        else ("machines updating: none" in text)
    )
    for s in states:
        s["status"]["inventory"] = {"source": "Node", "pool": "gpu"}
    fleet.listed.clear()
    text = eta.run(args, reading.Target(), NOW)
    assert fleet.listed == ["hoststates"] and "machines updating: 2" in text


# -- arguments, errors ----------------------------------------------------------------------


def test_arguments_as_kubectl_users_type_them() -> None:
    parser = main.build_parser()
    args = parser.parse_args(["why", "h1", "-n", "metal", "--context", "lab"])
    assert (args.command, args.name, args.namespace, args.context) == ("why", "h1", "metal", "lab")
    args = parser.parse_args(["-n", "metal", "history", "h1", "--limit", "5", "--since", "2h"])
    assert (args.namespace, args.limit, args.since) == ("metal", 5, "2h")
    args = parser.parse_args(["eta", "worker", "--kubeconfig", "/k"])
    assert (args.pool, args.kubeconfig, args.namespace) == ("worker", "/k", None)
    assert main.since_at("45m", NOW) == NOW - 2700
    assert main.since_at("2026-11-28T21:00:00Z", NOW) == parse_rfc3339("2026-11-28T21:00:00Z")
    with pytest.raises(ValueError, match="neither a duration"):
        main.since_at("yesterday", NOW)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["why"], "the following arguments are required: name"),
        (["history", "h", "--limit", "-1"], "--limit must be 0"),
        (["history", "h", "--since", "soon"], "'soon' is neither a duration"),
        (["what", "h"], "invalid choice: 'what'"),
    ],
)
def test_a_mistake_in_the_arguments_is_one_line_and_exit_code_2(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main.main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


class Missing:
    """A cluster that has nothing."""

    def get(self, resource: Any, namespace: str | None, name: str) -> Any:
        raise NotFound(f'{resource.plural} "{name}" not found')

    def close(self) -> None:
        pass


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["why", "ghost", "-n", "metal"],
            "kubectl hoststate why: HostState metal/ghost not found; list them with "
            "kubectl get hoststates -n metal (or -A for every namespace)\n",
        ),
        (
            ["history", "ghost", "-n", "metal"],
            "kubectl hoststate history: HostState metal/ghost not found; list them with "
            "kubectl get hoststates -n metal (or -A for every namespace)\n",
        ),
        (
            ["eta", "ghosts"],
            "kubectl hoststate eta: NodePool ghosts not found; list them with "
            "kubectl get nodepools.hoststate.io\n",
        ),
    ],
)
def test_an_object_not_found_is_named_with_exit_code_1(
    argv: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(reading.Target, "connect", lambda self: Missing())
    monkeypatch.setattr(reading.Target, "namespace", lambda self: "default")
    assert main.main(argv, clock=lambda: NOW) == 1
    out = capsys.readouterr()
    assert (out.out, out.err) == ("", message)


class NoCRDs(Missing):
    """An API server without hoststate's CRDs."""

    def get(self, resource: Any, namespace: str | None, name: str) -> Any:
        raise NotFound("the server could not find the requested resource")


def test_an_api_server_without_the_crds_is_told_apart_from_an_object_not_found(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reading.Target, "connect", lambda self: NoCRDs())
    assert main.main(["why", "h", "-n", "metal"]) == 1
    assert capsys.readouterr().err == (
        "kubectl hoststate why: reading HostState metal/h: the API server serves no "
        "HostStates (hoststate.io/v1alpha1): are hoststate's CRDs installed? (docs/cluster.md)\n"
    )


def test_an_api_server_out_of_reach_is_named(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: a\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: a, context: {cluster: c, user: u, namespace: metal}}]\n"
    )
    assert main.main(["eta", "worker", "--kubeconfig", str(config)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("kubectl hoststate eta: cannot reach the API server to read NodePool")
    assert "127.0.0.1" in err and err.endswith(
        "check the kubeconfig's server (--kubeconfig, --context)\n"
    )


def test_an_unreadable_kubeconfig_is_named(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope"
    assert main.main(["why", "h", "-n", "x", "--kubeconfig", str(missing)]) == 1
    err = capsys.readouterr().err
    assert f"cannot load the kubeconfig ({missing})" in err and "--kubeconfig FILE" in err


def test_the_namespace_is_the_contexts_else_default(tmp_path: Any) -> None:
    config = tmp_path / "config"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: a\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts:\n"
        "- {name: a, context: {cluster: c, user: u, namespace: metal}}\n"
        "- {name: b, context: {cluster: c, user: u}}\n"
    )
    assert reading.Target(str(config)).namespace() == "metal"
    assert reading.Target(str(config), "b").namespace() == "default"


# -- the krew manifest ----------------------------------------------------------------------


def test_the_krew_manifest_names_this_version_and_the_archive_the_code_makes() -> None:
    import hashlib
    import io
    import tomllib
    import zipfile
    from pathlib import Path

    import yaml

    from state_controller.plugin import krew

    root = Path(__file__).resolve().parents[2]
    manifest = yaml.safe_load((root / "plugins" / "krew" / "hoststate.yaml").read_text())
    version = tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
    assert manifest["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2"
    assert (manifest["kind"], manifest["metadata"]["name"]) == ("Plugin", "hoststate")
    spec = manifest["spec"]
    assert spec["version"] == f"v{version}"
    assert "pip install hoststate" in spec["description"]
    (platform,) = spec["platforms"]
    assert platform["uri"].endswith(f"/v{version}/{krew.archive_name(version)}")
    assert platform["sha256"] == krew.sha256() == hashlib.sha256(krew.archive()).hexdigest()
    assert platform["bin"] == krew.BIN and platform["files"] == [{"from": krew.BIN, "to": "."}]
    with zipfile.ZipFile(io.BytesIO(krew.archive())) as z:
        (member,) = z.infolist()
        assert member.filename == krew.BIN and member.external_attr >> 16 == 0o100755
        launcher = z.read(member).decode()
    assert launcher.startswith("#!/bin/sh\n")
    assert 'exec "$python" -m state_controller.plugin.main "$@"' in launcher


def test_the_krew_release_archive_written_is_the_one_the_manifest_names(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m state_controller.plugin.krew DIR`` writes the file a release attaches:
    its sha256 is the manifest's, and the lines it prints are the manifest's own."""
    import hashlib
    from pathlib import Path

    import yaml

    from state_controller import __version__
    from state_controller.plugin import krew

    root = Path(__file__).resolve().parents[2]
    text = (root / "plugins" / "krew" / "hoststate.yaml").read_text()
    (platform,) = yaml.safe_load(text)["spec"]["platforms"]
    assert krew.main([str(tmp_path / "dist")]) == 0
    written = tmp_path / "dist" / platform["uri"].rsplit("/", 1)[1]
    assert hashlib.sha256(written.read_bytes()).hexdigest() == platform["sha256"]
    out = capsys.readouterr().out
    assert out.startswith(f"{written} sha256 {platform['sha256']}\n")
    uncommented = [line.split(" #")[0] for line in text.splitlines()]
    for line in krew.manifest_lines(__version__).splitlines():
        assert line in uncommented and line in out
    assert krew.main([str(tmp_path / "dist")]) == 0  # again: the same bytes
    assert hashlib.sha256(written.read_bytes()).hexdigest() == platform["sha256"]
    assert krew.main([]) == 2 and "usage: python -m state_controller.plugin.krew DIR" in (
        capsys.readouterr().err
    )
    (tmp_path / "file").write_text("")
    assert krew.main([str(tmp_path / "file")]) == 1
    assert "name a directory you can write to" in capsys.readouterr().err


def test_the_krew_launcher_runs_the_package_or_says_how_to_install_it(tmp_path: Any) -> None:
    import io
    import subprocess
    import sys
    import zipfile

    from state_controller.plugin import krew

    with zipfile.ZipFile(io.BytesIO(krew.archive())) as z:
        z.extractall(tmp_path)
    launcher = tmp_path / krew.BIN
    launcher.chmod(0o755)

    def run(python: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(launcher), "why", "--help"],
            env={"PATH": "/usr/bin:/bin", "HOSTSTATE_PYTHON": python},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    done = run(sys.executable)
    assert done.returncode == 0 and done.stdout.startswith("usage: kubectl hoststate why")
    missing = tmp_path / "python-without-hoststate"
    missing.write_text("#!/bin/sh\nexit 1\n")
    missing.chmod(0o755)
    done = run(str(missing))
    assert done.returncode == 1
    assert "has no hoststate package; install it with 'pip install hoststate'" in done.stderr
