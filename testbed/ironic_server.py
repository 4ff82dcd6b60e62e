"""A real OpenStack Ironic (standalone, fake-hardware, optionally redfish) on loopback, for tests.

Usage::

    venv = subprocess.check_output(["tools/ironic/install.sh"], text=True).splitlines()[-1]
    with IronicServer(venv, tmp_path, fake_delays={"deploy": 5}) as ironic:
        urllib.request.urlopen(ironic.url + "/v1")  # noauth: no token needed
        ironic.stop(); ironic.start()              # restart: same DB, same port
        ironic.wipe_database()                     # empty DB, running again

One ``ironic`` all-in-one process (API + conductor, ``rpc_transport = none``)
with a SQLite database in the work dir, ``auth_strategy = noauth`` and only the
``fake-hardware`` hardware type. The process runs in its own session/process
group; ``stop()`` terminates the whole group (SIGTERM, then SIGKILL), also when
``start()`` fails half-way. Clients must send ``X-OpenStack-Ironic-API-Version``
(this Ironic, 39.0.0, goes up to 1.115); without it they get 1.1 semantics.

Real failures with this config (no mocks), per node:

* deploy failed: ``deploy_interface=direct`` and ``instance_info.image_source``
  an http URL nobody listens on -> ``deploy failed`` in ~0.3 s; with a URL that
  answers -> ``wait call-back`` -> ``deploy failed`` after ~5 s (timeout).
* inspect failed: ``inspect_interface=agent`` -> ``inspect wait`` ->
  ``inspect failed`` after ~5 s.
* clean failed: ``deploy_interface=direct`` and ``automated_clean=true`` ->
  ``provide`` ends in ``clean failed`` after ~5 s; or a manual ``clean`` with
  ``{"interface": "bios", "step": "apply_configuration", "args": {"settings":
  [{"bad": 1}]}}`` -> ``clean failed`` at once (and maintenance=true).
* verify (manage) failed: ``power_interface=agent`` -> back to ``enroll``.
* deploy failed on a checksum file: ``deploy_interface=direct``,
  ``driver_info.image_download_source=local`` (the conductor fetches the image and
  its checksum file itself), ``instance_info.image_source`` an http URL that
  answers and ``image_checksum`` one that does not -> ``deploy failed`` in ~0.3 s,
  "Failed to prepare to deploy: Validation of image href <checksum URL> failed"
  (an HTTP error) or "Failed to download image <checksum URL>" (unreachable).
* 409 "Node ... is locked by host ...": any request while a ``fake_delays``
  operation holds the node lock.

Only ``fake-hardware`` is enabled and ``default_<kind>_interface`` is set for
it; enabling another hardware type through ``config`` needs those overridden.
``redfish=True`` enables the ``redfish`` hardware type too, with the interfaces
listed at :data:`REDFISH_INTERFACES` (for a BMC such as testbed/redfish_bmc.py).
``servicing=True`` (implies ``redfish``) adds the ``redfish`` BIOS, firmware and RAID
interfaces (:data:`SERVICING_INTERFACES`), which a redfish node then gets, and the short
``[redfish]`` polling intervals of :data:`SERVICING_CONFIG`: out-of-band service steps
(``PUT /v1/nodes/{id}/states/provision`` ``{"target": "service", "service_steps": [...]}``,
API >= 1.87) on an ``active`` node, with no agent.

Stdlib only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from testbed.processes import LoopbackServer, ServerProcess, http_probe

__all__ = ["FAKE_DELAY_KEYS", "IronicServer", "IronicServerError"]

#: Keys accepted in ``fake_delays`` (``[fake] <key>_delay`` in ironic.conf,
#: from ironic/conf/fake.py). Values are seconds: a number, or a
#: ``"min,max"`` string for a triangular random delay weighted on min.
FAKE_DELAY_KEYS = frozenset(
    {
        "power",
        "boot",
        "deploy",
        "vendor",
        "management",
        "inspect",
        "raid",
        "bios",
        "storage",
        "rescue",
        "firmware",
    }
)

#: Interfaces enabled for fake-hardware. The first entry of each list is what
#: a new node gets by default. ``direct`` deploy and ``agent`` inspect are
#: extra: they wait for an IPA callback that never comes, which is how tests
#: get a real ``deploy failed`` / ``inspect failed`` (see the timeouts below).
DEFAULT_INTERFACES: dict[str, str] = {
    "bios": "fake,no-bios",
    "boot": "fake",
    "console": "fake,no-console",
    "deploy": "fake,direct",
    "firmware": "fake,no-firmware",
    "inspect": "fake,agent,no-inspect",
    "management": "fake,noop",
    "network": "noop",
    "power": "fake,agent",
    "raid": "fake,agent,no-raid",
    "rescue": "fake,no-rescue",
    "storage": "noop,fake",
    "vendor": "fake,no-vendor",
}

#: Interfaces added for the ``redfish`` hardware type (``IronicServer(redfish=True)``),
#: those that work against the Redfish emulator (testbed/redfish_bmc.py) with no
#: agent (IPA) and no ramdisk ever booting; found by trying them on Ironic 39.0.0 and
#: sushy-tools 2.2.0:
#:
#: * power and management ``redfish``: the BMC switches power and sets boot devices;
#:   the ``redfish`` type offers no fake power or management. A power change takes
#:   sushy-tools' emulator 0 to 11 s; RedfishBMC makes it half a second.
#: * boot ``redfish-virtual-media``: the ``redfish`` type offers no ``fake`` boot, and
#:   (i)PXE/HTTP boot need DHCP and a TFTP/HTTP server for a real kernel and ramdisk.
#: * deploy ``ramdisk`` (set on the node, as the provisioner does for a ``live-iso``
#:   image: Ironic's first choice for a redfish node is
#:   ``direct``, which waits for an agent, as ``custom-agent`` does; ``fake`` deploy is
#:   fake-hardware's only): with ``instance_info.boot_iso`` an http URL and
#:   ``[deploy] ramdisk_image_download_source = http`` (set below), Ironic hands the URL
#:   to the BMC as is; the emulator downloads it on VirtualMedia.InsertMedia, the node
#:   powers on and is ``active`` (~11 s). With the default ``local`` Ironic would serve
#:   the ISO itself from ``[deploy] http_url``.
#: * inspect ``redfish`` (out-of-band): reads processors, memory, disks and NICs from the
#:   BMC, with no agent; a redfish node gets it by Ironic's rule below (the ``redfish``
#:   type lists it first). The emulator's fake systems have processors and memory only
#:   when started through testbed/sushy_hardware.py (RedfishBMC does): else Ironic
#:   ends ``inspect failed`` ("The attribute Processors is missing from the resource").
#: * a config drive (ramdisk deploy): Ironic builds it into an ISO with genisoimage
#:   found on its PATH (``tool_dirs``), writes it under ``[deploy] http_root`` and hands
#:   the BMC its URL under ``http_url``; a test serves that directory over HTTP.
#:
#: A redfish node gets the others by Ironic's own rule, the first of its type's
#: supported interfaces that is enabled, so this server sets no ``default_<kind>_interface``
#: where the two types disagree: fake-hardware lists ``fake`` first for every kind, which
#: are the defaults it has without redfish, and keeps them.
REDFISH_INTERFACES: dict[str, str] = {
    "boot": "redfish-virtual-media",
    "deploy": "ramdisk",
    "inspect": "redfish",
    "management": "redfish",
    "power": "redfish",
}
#: Interfaces added by ``IronicServer(servicing=True)``: the ``redfish`` ones run their service
#: steps against the BMC alone (no agent): ``bios.apply_configuration``/``factory_reset``,
#: ``firmware.update``, ``raid.apply_configuration``/``delete_configuration``. None of them is
#: enabled otherwise, and a redfish node then gets ``no-bios``, ``no-firmware`` and
#: ``no-raid`` (fake-hardware lists ``fake`` first and keeps it). The emulator needs
#: testbed/sushy_servicing.py for them (BIOS, firmware versions, RAID volumes).
SERVICING_INTERFACES: dict[str, str] = {"bios": "redfish", "firmware": "redfish", "raid": "redfish"}
#: ``[redfish]`` options set by ``servicing=True``. By default Ironic polls a firmware
#: update's BMC task, a BIOS change and a RAID job every 60 s, checks the BMC 3 times 30 s
#: apart after a firmware update, and after a ``bmc`` update looks for a new BMC version
#: every 30 s for up to ``firmware_update_reboot_delay`` (300 s, also the power timeout of
#: the update's reboots): here 2 s, 1 s, 2 s and 30 s (sushy-tools' own power delays are up
#: to 11 s). Measured with them (Ironic 39.0.0, sushy-tools 2.2.0, its own power delays,
#: ``RedfishBMC(power_delay=None)``): a BIOS setting 13 to 22 s
#: (a reboot: two of the emulator's power delays), a BIOS firmware update 22 to 33 s, RAID
#: ~4 s; a ``bmc`` firmware update 41 s (the emulator's BMC version never changes: Ironic
#: waits it out; 311 s with the defaults).
SERVICING_CONFIG: dict[str, str] = {
    "firmware_update_status_interval": "2",
    "firmware_update_fail_interval": "2",
    "firmware_update_validation_interval": "1",
    "firmware_update_bmc_version_check_interval": "2",
    "firmware_update_reboot_delay": "30",
    "raid_config_status_interval": "2",
    "raid_config_fail_interval": "2",
}
#: Defaults valid for both hardware types, kept when redfish is enabled.
_SHARED_DEFAULTS = ("network", "storage")

#: Put first on Ironic's ``PYTHONPATH``: its sitecustomize remembers PBKDF2's answers
#: (that module's docstring says why; Ironic's behaviour is unchanged).
IRONIC_SITE = Path(__file__).resolve().parent / "ironic_site"

_READY_TIMEOUT = 60.0
_STOP_TIMEOUT = 5.0
# Log lines after which the service will never answer: the cotyledon master
# stays alive when its API/conductor worker dies (and may respawn it in a
# loop), so waiting for /v1 would only run into the timeout.
_FATAL_LOG_MARKERS = (
    " CRITICAL ",
    "Traceback (most recent call last)",
    "Failed to register hardware types",
    "Successfully stopped conductor",
    "Forking too fast",
)


class IronicServerError(RuntimeError):
    """Ironic could not be set up, started or stopped."""


class IronicServer(LoopbackServer):
    """Run ``ironic`` from ``venv`` with state in ``workdir``.

    ``fake_delays`` maps :data:`FAKE_DELAY_KEYS` to seconds. ``config``
    overrides or adds ironic.conf options: ``{"conductor": {"x": "1"}}``.
    ``redfish`` enables the ``redfish`` hardware type next to fake-hardware;
    ``servicing`` (implies ``redfish``) its BIOS, firmware and RAID interfaces too.
    ``tool_dirs`` go first on Ironic's ``PATH`` (e.g. genisoimage's, which builds the
    config drive of a redfish deploy: tools/genisoimage/install.sh).
    The port is picked once and kept across ``stop()``/``start()``.
    """

    def __init__(
        self,
        venv: str | os.PathLike[str],
        workdir: str | os.PathLike[str],
        fake_delays: Mapping[str, float | str] | None = None,
        *,
        config: Mapping[str, Mapping[str, str | int | float | bool]] | None = None,
        redfish: bool = False,
        servicing: bool = False,
        tool_dirs: Sequence[str | os.PathLike[str]] = (),
        host: str = "127.0.0.1",
        port: int | None = None,
        ready_timeout: float = _READY_TIMEOUT,
        stop_timeout: float = _STOP_TIMEOUT,
    ) -> None:
        self.venv = Path(venv).resolve()
        self.workdir = Path(workdir).resolve()
        unknown = set(fake_delays or {}) - FAKE_DELAY_KEYS
        if unknown:
            raise ValueError(
                f"unknown fake delay(s) {sorted(unknown)}; use {sorted(FAKE_DELAY_KEYS)}"
            )
        self.fake_delays: dict[str, float | str] = dict(fake_delays or {})
        self.extra_config = {section: dict(opts) for section, opts in (config or {}).items()}
        self.redfish = redfish or servicing
        self.servicing = servicing
        self.tool_dirs = [Path(d).resolve() for d in tool_dirs]
        self.host = host
        self.port = port
        self.ready_timeout = ready_timeout
        self.stop_timeout = stop_timeout
        self.config_path = self.workdir / "ironic.conf"
        self.db_path = self.workdir / "ironic.sqlite"
        self.log_path = self.workdir / "ironic.log"
        self.lock_dir = self.workdir / "locks"
        self.http_root = self.workdir / "httpboot"
        self.error = IronicServerError
        self._process = ServerProcess(
            "ironic", self.log_path, stop_timeout=stop_timeout, error=IronicServerError
        )
        self._port_not_picked()
        for tool in ("ironic", "ironic-dbsync"):
            if not (self.venv / "bin" / tool).is_file():
                raise IronicServerError(
                    f"{self.venv / 'bin' / tool} not found; run tools/ironic/install.sh"
                )

    # -- LoopbackServer's hooks, then the public API ---------------------------

    def _prepare(self) -> None:
        self.lock_dir.mkdir(exist_ok=True)
        if not self.db_path.exists():
            self.create_schema()

    def _write_config(self) -> None:
        self.write_config()

    def _start_once(self) -> None:
        argv = [str(self.venv / "bin" / "ironic"), "--config-file", str(self.config_path)]
        path = os.pathsep.join([*map(str, self.tool_dirs), os.environ.get("PATH", "")])
        site = os.pathsep.join(filter(None, [str(IRONIC_SITE), os.environ.get("PYTHONPATH")]))
        self._process.start(
            argv,
            self.workdir,
            banner=f"starting ironic on {self.url}",
            env={**os.environ, "PATH": path, "PYTHONPATH": site},
        )
        try:
            self._wait_ready()
        except BaseException:
            # A half-started ironic often ignores SIGTERM: do not wait long.
            self.stop(grace=1.0)
            raise

    def restart(self) -> None:
        self.stop()
        self.start()

    def wipe_database(self) -> None:
        """Stop, delete the SQLite DB, create an empty schema, start again."""
        self.stop()
        for suffix in ("", "-journal", "-wal", "-shm"):
            Path(f"{self.db_path}{suffix}").unlink(missing_ok=True)
        shutil.rmtree(self.lock_dir, ignore_errors=True)
        self.start()

    def create_schema(self) -> None:
        """An empty Ironic database at the configured SQLite file: a copy of the one
        ``ironic-dbsync create_schema`` made for this venv, or made now and kept beside
        the venv (the schema depends on Ironic's version alone, which the venv's cache
        key pins; the command costs seconds of CPU at every Ironic start)."""
        kept = self.venv.parent / f"{self.venv.name}.schema.sqlite"
        if kept.is_file():
            shutil.copyfile(kept, self.db_path)
            return
        self._dbsync_create_schema()
        partial = kept.with_name(f"{kept.name}.{os.getpid()}")
        shutil.copyfile(self.db_path, partial)
        os.replace(partial, kept)  # whole or absent: another worker may be reading it

    def _dbsync_create_schema(self) -> None:
        self.write_config()
        cmd = [
            str(self.venv / "bin" / "ironic-dbsync"),
            "--config-file",
            str(self.config_path),
            "create_schema",
        ]
        try:
            res = subprocess.run(
                cmd, cwd=self.workdir, capture_output=True, text=True, timeout=120, check=False
            )
        except subprocess.TimeoutExpired as e:
            raise IronicServerError(f"{' '.join(cmd)} timed out") from e
        if res.returncode != 0:
            out = "\n".join((res.stdout + res.stderr).splitlines()[-40:])
            raise IronicServerError(
                f"ironic-dbsync create_schema failed ({res.returncode}):\n{out}"
            )

    def config_sections(self) -> dict[str, dict[str, str]]:
        """The ironic.conf content as {section: {option: value}}."""
        default: dict[str, str] = {
            "auth_strategy": "noauth",
            "rpc_transport": "none",
            "host": "hoststate-ironic",
            "use_stderr": "true",
            "debug": "false",
            "enabled_hardware_types": "fake-hardware,redfish" if self.redfish else "fake-hardware",
        }
        for kind, enabled in DEFAULT_INTERFACES.items():
            if self.redfish and kind in REDFISH_INTERFACES:
                enabled = f"{enabled},{REDFISH_INTERFACES[kind]}"
            if self.servicing and kind in SERVICING_INTERFACES:
                enabled = f"{enabled},{SERVICING_INTERFACES[kind]}"
            default[f"enabled_{kind}_interfaces"] = enabled
            if not self.redfish or kind in _SHARED_DEFAULTS:
                default[f"default_{kind}_interface"] = enabled.split(",")[0]
        sections: dict[str, dict[str, str]] = {
            "DEFAULT": default,
            "api": {"host_ip": self.host, "port": str(self.port)},
            "database": {"connection": f"sqlite:///{self.db_path}"},
            "dhcp": {"dhcp_provider": "none"},
            "conductor": {
                "automated_clean": "false",
                # Timeouts for the direct-deploy / agent-inspect failure
                # recipes (nothing ever calls back): fail after ~5-7 s.
                "deploy_callback_timeout": "5",
                "inspect_wait_timeout": "5",
                "clean_callback_timeout": "5",
                "check_provision_state_interval": "1",
                # Must stay below the callback timeouts (startup warning).
                "max_conductor_wait_step_seconds": "2",
            },
            # Lets ``agent`` inspect start with the fake boot interface
            # (unmanaged inspection: power off, PXE, power on, wait).
            "inspector": {"require_managed_boot": "false"},
            # Where an IPA would call back (direct deploy / agent inspect);
            # without it those fail at once with a keystone catalog error.
            "service_catalog": {"endpoint_override": self.url},
            # Where Ironic serves images it fetched itself (image_download_source
            # "local"); nothing serves them, but a local deploy is refused without it.
            "deploy": {"http_url": f"http://{self.host}:9/", "http_root": str(self.http_root)},
            "oslo_concurrency": {"lock_path": str(self.lock_dir)},
            "fake": {f"{k}_delay": str(v) for k, v in sorted(self.fake_delays.items())},
        }
        if self.redfish:  # a redfish ramdisk deploy: the BMC fetches boot_iso itself
            sections["deploy"]["ramdisk_image_download_source"] = "http"
        if self.servicing:
            sections["redfish"] = dict(SERVICING_CONFIG)
        for section, opts in self.extra_config.items():
            target = sections.setdefault(section, {})
            for key, value in opts.items():
                target[key] = str(value).lower() if isinstance(value, bool) else str(value)
        return sections

    def write_config(self) -> Path:
        lines: list[str] = []
        for section, opts in self.config_sections().items():
            lines.append(f"[{section}]")
            lines.extend(f"{key} = {value}" for key, value in opts.items())
            lines.append("")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text("\n".join(lines))
        return self.config_path

    # -- internals ----------------------------------------------------------

    def _wait_ready(self) -> None:
        log_start = self.log_path.stat().st_size if self.log_path.exists() else 0

        def fatal() -> str | None:
            lines = self._fatal_log_lines(log_start)
            if not lines:
                return None
            return (
                f"ironic failed during startup ({' | '.join(lines)}); "
                f"log {self.log_path}:\n{self.log_tail()}"
            )

        def answers(body: bytes) -> bool:
            return "version" in json.loads(body)

        self._process.wait_ready(
            http_probe(f"{self.url}/v1", timeout=2, ready=answers),
            timeout=self.ready_timeout,
            not_ready=f"did not answer GET {self.url}/v1",
            fatal=fatal,
        )

    def _fatal_log_lines(self, offset: int) -> list[str]:
        """Lines that show startup failed: the markers and, for a traceback, its last line."""
        try:
            with self.log_path.open("rb") as f:
                f.seek(offset)
                text = f.read().decode(errors="replace")
        except FileNotFoundError:
            return []
        lines = text.splitlines()
        found: list[str] = []
        for i, line in enumerate(lines):
            if not any(marker in line for marker in _FATAL_LOG_MARKERS):
                continue
            if line.startswith("Traceback"):
                # The exception line ends the traceback; wait until it is written.
                end = next(
                    (j for j in range(i + 1, len(lines)) if not lines[j].startswith(" ")), None
                )
                if end is None:
                    continue
                line = lines[end]
            found.append(line.strip())
        return found
