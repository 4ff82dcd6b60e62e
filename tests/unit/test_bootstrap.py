"""Bootstrap and pivot as a user meets them without a cluster: the hosts file, the state
dir held by one process, and every mistake answered in one line."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from state_controller.bootstrap.hostsfile import (
    HostsFileError,
    apply_hosts_file,
    read_hosts_file,
)
from state_controller.bootstrap.state_dir import StateDir, StateDirError
from state_controller.cluster.embedded import EmbeddedCluster
from state_controller.cluster.interface import HOSTS, SECRETS
from state_controller.cluster.schema import validators
from testbed.bootstrap import bootstrap_process, store_states, write_hosts_file
from testbed.processes import cli, free_port
from tests.conftest import wait_for

pytestmark = pytest.mark.slow  # most tests run state-controller bootstrap as a process

HOST = """
apiVersion: hoststate.io/v1alpha1
kind: Host
metadata: {name: master-0, namespace: metal}
spec:
  online: true
  bmc: {address: "redfish://10.0.0.1/redfish/v1/Systems/1", credentialsName: master-0-bmc}
"""
SECRET = """
apiVersion: v1
kind: Secret
metadata: {name: master-0-bmc, namespace: metal}
stringData: {username: admin, password: s3cret}
"""

CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}"


def hosts_file(tmp_path: Path, *docs: str) -> Path:
    path = tmp_path / "hosts.yaml"
    path.write_text("\n---\n".join(textwrap.dedent(d) for d in docs))
    return path


def test_a_hosts_file_reads_like_kubectl_apply_input(tmp_path: Path) -> None:
    read = read_hosts_file(hosts_file(tmp_path, HOST, SECRET))
    assert [(h["metadata"]["namespace"], h["metadata"]["name"]) for h in read.hosts] == [
        ("metal", "master-0")
    ]
    (secret,) = read.secrets
    assert "stringData" not in secret  # folded into data, as the API server stores it
    assert base64.b64decode(secret["data"]["password"]) == b"s3cret"


@pytest.mark.parametrize(
    ("docs", "says"),
    [
        ((HOST, SECRET, "key: [unclosed"), "not YAML"),
        ((HOST.replace("name: master-0,", ""), SECRET), "document 1: metadata.name is missing"),
        ((HOST.replace("hoststate.io/", "metal3.io/"), SECRET), "use hoststate.io/v1alpha1"),
        ((HOST.replace("online: true", "online: maybe"), SECRET), "spec.online"),
        ((HOST,), "credentialsName 'master-0-bmc', which is not a Secret in the file"),
        ((HOST, SECRET, HOST), "document 3: Host metal/master-0 appears twice"),
        ((SECRET,), "no Host in the file"),
    ],
)  # fmt: skip
def test_a_mistake_in_the_hosts_file_is_one_line_naming_the_document(
    tmp_path: Path, docs: tuple[str, ...], says: str
) -> None:
    with pytest.raises(HostsFileError) as error:
        read_hosts_file(hosts_file(tmp_path, *docs))
    message = str(error.value)
    assert says in message and "\n" not in message, message
    assert message.startswith(f"--hosts {tmp_path / 'hosts.yaml'}")


def test_a_document_of_another_kind_is_skipped_with_a_note(tmp_path: Path) -> None:
    read = read_hosts_file(hosts_file(tmp_path, HOST, CONFIGMAP, SECRET))
    assert len(read.hosts) == len(read.secrets) == 1
    (note,) = read.notes
    assert note.startswith(f"--hosts {tmp_path / 'hosts.yaml'}: document 2: ConfigMap ")
    assert "skipped: the file keeps Hosts" in note and "\n" not in note


def test_a_yaml_mistake_is_located_without_quoting_the_line(tmp_path: Path) -> None:
    leaky = SECRET.replace("password: s3cret}", 'password: "hunter2}\n')
    with pytest.raises(HostsFileError) as error:
        read_hosts_file(hosts_file(tmp_path, HOST, leaky))
    assert "line " in str(error.value) and "hunter2" not in str(error.value), error.value


def test_applying_the_same_file_again_writes_nothing(tmp_path: Path) -> None:
    read = read_hosts_file(hosts_file(tmp_path, HOST, SECRET))
    with EmbeddedCluster(validators=validators()) as store:
        assert apply_hosts_file(store, read) == {"created": 2, "updated": 0, "unchanged": 0}
        version = store.resource_version
        assert apply_hosts_file(store, read) == {"created": 0, "updated": 0, "unchanged": 2}
        assert store.resource_version == version
        changed = yaml.safe_load(textwrap.dedent(HOST))
        changed["spec"]["online"] = False
        (tmp_path / "hosts.yaml").write_text(yaml.safe_dump_all([changed, yaml.safe_load(SECRET)]))
        edited = read_hosts_file(tmp_path / "hosts.yaml")
        assert apply_hosts_file(store, edited) == {"created": 0, "updated": 1, "unchanged": 1}
        assert store.get(HOSTS, "metal", "master-0")["spec"]["online"] is False
        assert store.get(SECRETS, "metal", "master-0-bmc")["data"]


def test_the_state_dir_is_held_by_one_process_and_let_go_when_it_dies(tmp_path: Path) -> None:
    state = tmp_path / "state"
    script = (
        "import sys, time; from state_controller.bootstrap.state_dir import StateDir; "
        f"StateDir({str(state)!r}).lock('bootstrap'); print('held', flush=True); time.sleep(600)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(StateDirError) as refused:
            StateDir(state).lock("pivot")
        assert f"state-controller bootstrap (pid {holder.pid})" in str(refused.value)
        assert "stop it first (Ctrl-C) to pivot" in str(refused.value)
    finally:
        os.killpg(holder.pid, 9)  # as kill -9 would
        holder.wait()
    with StateDir(state).lock("pivot"):
        pass  # the kernel let the lock go with the process


def test_command_line_mistakes_are_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    garbled = tmp_path / "garbled.kubeconfig"
    garbled.write_text("clusters: [unclosed\n")
    nobody = tmp_path / "nobody.kubeconfig"  # an API server that is not there
    nobody.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{free_port()}",
                                              "insecure-skip-tls-verify": True}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }))  # fmt: skip
    for args, says in (
        (("bootstrap", "--state-dir", str(empty)), "holds no bootstrap yet; pass --hosts FILE"),
        (("bootstrap", "--state-dir", str(empty), "--hosts", str(tmp_path / "none.yaml")),
         "No such file"),
        (("pivot", "--state-dir", str(empty), "--kubeconfig", "k"), "holds no bootstrap"),
        (("get", "hoststates", "--state-dir", str(empty)), "holds no bootstrap"),
        (("pivot", "--from", str(tmp_path / "nope"), "--to", "k"), "--from"),
        (("pivot", "--from", str(garbled), "--to", "k"), "not a usable kubeconfig"),
        (("pivot", "--from", str(nobody), "--to", str(nobody)), "did not answer"),
    ):  # fmt: skip
        done = cli(*args, timeout=120)
        assert done.returncode in (1, 2), (args, done.stderr)
        assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_second_bootstrap_on_the_same_dir_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_hosts_file(tmp_path / "hosts.yaml", "metal", 1)
    with bootstrap_process(state, tmp_path / "boot.log") as boot:
        boot.start("--hosts", str(tmp_path / "hosts.yaml"))
        wait_for(lambda: store_states(state), timeout=60, what=f"bootstrap up: {boot.tail()}")
        second = cli("bootstrap", "--state-dir", str(state), timeout=60)
        assert second.returncode == 2 and "is in use by state-controller bootstrap" in second.stderr
        pivoted = cli("pivot", "--state-dir", str(state), "--kubeconfig", "k", timeout=60)
        assert pivoted.returncode == 2 and "to pivot" in pivoted.stderr, pivoted.stderr


def test_bootstrap_reports_its_mode_since_it_began_across_a_kill(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_hosts_file(tmp_path / "hosts.yaml", "metal", 2)
    log = tmp_path / "boot.log"
    with bootstrap_process(state, log, ["--simulated-timings", "zero"]) as boot:
        boot.start("--hosts", str(tmp_path / "hosts.yaml"))
        first = scrape(log, boot)
        began = json.loads((state / "bootstrap.json").read_text())["startedAt"]
        assert first['hoststate_controller_mode{mode="Bootstrap"}'] == 1.0
        assert first['hoststate_controller_mode{mode="Cluster"}'] == 0.0
        assert first["hoststate_controller_mode_since_timestamp_seconds"] == pytest.approx(began)
        boot.kill9()
        log.write_text("")
        boot.start()
        again = scrape(log, boot)
        assert again["hoststate_controller_mode_since_timestamp_seconds"] == pytest.approx(began)


def scrape(log: Path, boot: Any) -> dict[str, float]:
    """The bootstrap's /metrics, at the address it printed, as name{labels} -> value."""
    found = wait_for(
        lambda: re.search(r"metrics: (http://\S+)", log.read_text()), timeout=60,
        what=f"the metrics address: {boot.tail()}",
    )  # fmt: skip
    text = wait_for(lambda: _get(found.group(1)), timeout=30, what="/metrics")
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def _get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return str(answer.read().decode())
    except OSError:
        return None


def test_sigquit_prints_every_threads_stack_and_the_bootstrap_goes_on(tmp_path: Path) -> None:
    """``kill -QUIT`` shows where a controller that stopped moving stands."""
    write_hosts_file(tmp_path / "hosts.yaml", "metal", 1)
    with bootstrap_process(tmp_path / "state", tmp_path / "boot.log") as boot:
        boot.start("--hosts", str(tmp_path / "hosts.yaml"))
        wait_for(lambda: store_states(tmp_path / "state"), timeout=60, what="the host stored")
        shown = boot.stacks()
        assert "Current thread 0x" in shown and "most recent call first" in shown, shown
        assert "state_controller" in shown  # the controller's own frames
        assert boot.proc is not None and boot.proc.poll() is None  # still running
        wait_for(
            lambda: set(store_states(tmp_path / "state").values()) == {"provisioned"},
            timeout=60,
            what="provisioned after the dump",
        )
