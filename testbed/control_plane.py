"""A real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager) on loopback.

Usage::

    bin_dir = subprocess.check_output(["tools/k8s/build.sh"], text=True).splitlines()[-1]
    with ControlPlane(bin_dir, tmp_path) as cp:
        subprocess.run([cp.kubectl, "--kubeconfig", str(cp.kubeconfig), "get", "ns"], check=True)
        cp.stop_apiserver(); cp.start_apiserver()  # same URL, same etcd data

What runs: one etcd (data in ``<workdir>/etcd-data``, ``--unsafe-no-fsync``),
one kube-apiserver with ``--authorization-mode=RBAC`` and (unless
``controller_manager=False``) one kube-controller-manager running only the
``garbagecollector`` and ``namespace`` controllers, all on random free
127.0.0.1 ports. A throwaway CA signs the serving cert (127.0.0.1, localhost,
kubernetes.default.svc...; also used by kube-controller-manager), an admin
client cert (CN=admin, O=system:masters; ``kubeconfig`` authenticates as that
admin) and one for kube-controller-manager (CN=system:kube-controller-manager,
O=system:masters, ``controller-manager.kubeconfig``).

So ownerReferences are garbage-collected (background and foreground
propagation, orphaning) and deleted namespaces are emptied and removed. The
garbage collector re-discovers API resources every 30s, so dependents of a
custom resource whose CRD was created after start may be collected up to ~30s
late. There is no scheduler, kubelet or other controller: no Deployments ->
Pods, no ServiceAccount token/"default" ServiceAccount creation (so Pods
cannot be created unless ``--disable-admission-plugins=ServiceAccount`` is
passed in ``extra_apiserver_args``).

Each process runs in its own session/process group with its log in the work
dir (``etcd.log``, ``kube-apiserver.log``, ``kube-controller-manager.log``);
``stop()`` terminates all groups (SIGTERM, then SIGKILL), also when
``start()`` fails half-way. ``stop_apiserver()``/``start_apiserver()`` stop
and start kube-controller-manager along with kube-apiserver (a surviving one
reconnects only after client-go's watch backoff, up to a minute). With
``die_with_parent`` (default) the servers also get SIGKILL if the Python
process dies without cleaning up (``setpriv --pdeathsig``; note that Linux
sends it when the *thread* that started them exits, so start them from a
long-lived thread, e.g. the main one).

Stdlib + ``cryptography``.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import datetime as dt
import ipaddress
import json
import os
import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from testbed.processes import ServerProcess, Servers, free_port, http_probe, log_tail

__all__ = ["ControlPlane", "ControlPlaneError"]

_HOST = "127.0.0.1"
_SERVICE_CIDR = "10.0.0.0/24"
_SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
_ETCD_READY_TIMEOUT = 30.0
_APISERVER_READY_TIMEOUT = 90.0
_CONTROLLER_MANAGER_READY_TIMEOUT = 60.0
# Only what tests need: ownerReference GC and namespace deletion.
_CONTROLLERS = ("garbagecollector", "namespace")
_STOP_TIMEOUT = 5.0
_CERT_VALIDITY = dt.timedelta(days=30)


class ControlPlaneError(RuntimeError):
    """The control plane could not be set up, started or stopped."""


# -- PKI ---------------------------------------------------------------------


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization is not None:
        attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attrs)


def _make_ca() -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = _new_key()
    now = dt.datetime.now(dt.UTC)
    name = _name("hoststate-test-ca")
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + _CERT_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _make_leaf(
    ca_key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    subject: x509.Name,
    usage: x509.ObjectIdentifier,
    sans: Sequence[x509.GeneralName] = (),
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = _new_key()
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + _CERT_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(sans)), critical=False)
    return key, builder.sign(ca_key, hashes.SHA256())


# -- processes ---------------------------------------------------------------

# Control planes started and not yet stopped, stopped at interpreter exit as a
# last resort (a test that forgot ``stop()``/``with``).
_LIVE: set[ControlPlane] = set()


@atexit.register
def _stop_all() -> None:
    for cp in list(_LIVE):
        with contextlib.suppress(Exception):
            cp.stop()


class ControlPlane(Servers):
    """etcd + kube-apiserver (+ kube-controller-manager) from ``bin_dir``, state in ``workdir``.

    ``bin_dir`` comes from tools/k8s/build.sh. Ports are picked on the first
    ``start()`` and kept, so ``url`` and the kubeconfig stay valid across
    ``stop_apiserver()``/``start_apiserver()``. ``extra_apiserver_args``/
    ``extra_etcd_args``/``extra_controller_manager_args`` are appended to the
    command lines (later flags win), e.g. ``["--feature-gates=Foo=true"]``.
    ``controller_manager=False`` skips kube-controller-manager (no GC, no
    namespace deletion; a little faster to start).
    """

    def __init__(
        self,
        bin_dir: str | os.PathLike[str],
        workdir: str | os.PathLike[str],
        *,
        extra_apiserver_args: Sequence[str] = (),
        extra_etcd_args: Sequence[str] = (),
        extra_controller_manager_args: Sequence[str] = (),
        controller_manager: bool = True,
        etcd_ready_timeout: float = _ETCD_READY_TIMEOUT,
        apiserver_ready_timeout: float = _APISERVER_READY_TIMEOUT,
        controller_manager_ready_timeout: float = _CONTROLLER_MANAGER_READY_TIMEOUT,
        stop_timeout: float = _STOP_TIMEOUT,
        die_with_parent: bool = True,
    ) -> None:
        self.bin_dir = Path(bin_dir).resolve()
        self.workdir = Path(workdir).resolve()
        self.extra_apiserver_args = list(extra_apiserver_args)
        self.extra_etcd_args = list(extra_etcd_args)
        self.extra_controller_manager_args = list(extra_controller_manager_args)
        self.controller_manager = controller_manager
        self.etcd_ready_timeout = etcd_ready_timeout
        self.apiserver_ready_timeout = apiserver_ready_timeout
        self.controller_manager_ready_timeout = controller_manager_ready_timeout
        self.die_with_parent = die_with_parent
        tools = ["etcd", "kube-apiserver", "kubectl"]
        if controller_manager:
            tools.append("kube-controller-manager")
        for tool in tools:
            if not os.access(self.bin_dir / tool, os.X_OK):
                raise ControlPlaneError(f"{self.bin_dir / tool} not found; run tools/k8s/build.sh")

        self.pki_dir = self.workdir / "pki"
        self.ca_file = self.pki_dir / "ca.crt"
        self.serving_cert = self.pki_dir / "apiserver.crt"
        self.serving_key = self.pki_dir / "apiserver.key"
        self.client_cert = self.pki_dir / "admin.crt"
        self.client_key = self.pki_dir / "admin.key"
        self.controller_manager_cert = self.pki_dir / "controller-manager.crt"
        self.controller_manager_key = self.pki_dir / "controller-manager.key"
        self.sa_key = self.pki_dir / "sa.key"
        self.sa_pub = self.pki_dir / "sa.pub"
        self.etcd_data_dir = self.workdir / "etcd-data"
        self.etcd_log = self.workdir / "etcd.log"
        self.apiserver_log = self.workdir / "kube-apiserver.log"
        self.controller_manager_log = self.workdir / "kube-controller-manager.log"
        self.kubeconfig = self.workdir / "admin.kubeconfig"
        self.controller_manager_kubeconfig = self.workdir / "controller-manager.kubeconfig"

        self.etcd_port: int | None = None
        self.etcd_peer_port: int | None = None
        self.apiserver_port: int | None = None
        self.controller_manager_port: int | None = None
        self._etcd = self._process("etcd", self.etcd_log, stop_timeout)
        self._apiserver = self._process("kube-apiserver", self.apiserver_log, stop_timeout)
        self._controller_manager = self._process(
            "kube-controller-manager", self.controller_manager_log, stop_timeout
        )
        self._lock = threading.Lock()

    # -- public API ---------------------------------------------------------

    @property
    def url(self) -> str:
        """API server URL, e.g. ``https://127.0.0.1:40123``."""
        if self.apiserver_port is None:
            raise ControlPlaneError("ControlPlane has not been started")
        return f"https://{_HOST}:{self.apiserver_port}"

    @property
    def etcd_url(self) -> str:
        if self.etcd_port is None:
            raise ControlPlaneError("ControlPlane has not been started")
        return f"http://{_HOST}:{self.etcd_port}"

    @property
    def kubectl(self) -> Path:
        return self.bin_dir / "kubectl"

    @property
    def running(self) -> bool:
        return (
            self._etcd.running
            and self._apiserver.running
            and (self._controller_manager.running or not self.controller_manager)
        )

    def start(self) -> None:
        """Create PKI/kubeconfigs (once), start etcd, kube-apiserver, kube-controller-manager.

        Waits for etcd /health, kube-apiserver /readyz and kube-controller-manager /healthz.
        """
        with self._lock:
            if any(p.popen is not None for p in self._procs()):
                raise ControlPlaneError("control plane is already running; stop() it first")
            _LIVE.add(self)
            try:
                self.workdir.mkdir(parents=True, exist_ok=True)
                if self.apiserver_port is None:
                    self.etcd_port = free_port()
                    self.etcd_peer_port = free_port()
                    self.apiserver_port = free_port()
                if self.controller_manager_port is None:
                    self.controller_manager_port = free_port()
                if not self.ca_file.exists():
                    self._write_pki()
                self._write_kubeconfig(self.kubeconfig, "admin", self.client_cert, self.client_key)
                self._start_etcd()
                self._start_apiserver()
                if self.controller_manager:
                    self._write_kubeconfig(
                        self.controller_manager_kubeconfig,
                        "system:kube-controller-manager",
                        self.controller_manager_cert,
                        self.controller_manager_key,
                    )
                    self._start_controller_manager()
            except BaseException:
                with contextlib.suppress(ControlPlaneError):  # keep the original error
                    self._stop_locked()
                raise

    def stop(self) -> None:
        """Stop kube-controller-manager, kube-apiserver, then etcd.

        Each: SIGTERM its process group, SIGKILL after ``stop_timeout``.
        """
        with self._lock:
            self._stop_locked()

    def stop_apiserver(self) -> None:
        """Stop kube-controller-manager and kube-apiserver; etcd (and all data) stays."""
        with self._lock:
            self._stop_apiserver_locked()

    def start_apiserver(self) -> None:
        """(Re)start kube-apiserver on the same port against the running etcd.

        Also starts a fresh kube-controller-manager (unless disabled): one that
        lived through the outage would only notice the new apiserver after its
        client-go watch backoff (measured 2-60s), so GC would lag arbitrarily.
        """
        with self._lock:
            if not self._etcd.running:
                raise ControlPlaneError("etcd is not running; use start()")
            try:
                self._start_apiserver()
                if self.controller_manager:
                    self._start_controller_manager()
            except BaseException:
                with contextlib.suppress(ControlPlaneError):  # keep the original error
                    self._stop_apiserver_locked()
                raise

    def restart_apiserver(self) -> None:
        self.stop_apiserver()
        self.start_apiserver()

    def erase_from_etcd(self, key: str) -> int:
        """Delete ``key`` (e.g. ``/registry/secrets/ns/name``) in etcd itself, through its
        JSON gateway: an object gone while kube-apiserver is down, as if another writer
        removed it then. Returns how many keys etcd deleted."""
        body = json.dumps({"key": base64.b64encode(key.encode()).decode()}).encode()
        request = urllib.request.Request(
            f"{self.etcd_url}/v3/kv/deleterange",
            data=body,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            return int(json.loads(answer.read()).get("deleted", 0))

    def wait_established(self, *crds: str, timeout: float = 60.0) -> None:
        """Until each CustomResourceDefinition named (``hosts.hoststate.io``, with or
        without a ``crd/`` prefix) is Established: read from the API server, not with
        ``kubectl wait``, which fails at once on a CRD whose status has no conditions yet."""
        from testbed.waiting import wait_for

        def established(name: str) -> bool:
            url = f"{self.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
            try:
                with urllib.request.urlopen(url, timeout=10, context=self.ssl_context()) as got:
                    conditions = json.loads(got.read()).get("status", {}).get("conditions")
            except urllib.error.HTTPError as error:
                if error.code == 404:
                    return False
                raise
            return any(
                c.get("type") == "Established" and c.get("status") == "True"
                for c in conditions or ()
            )

        for crd in crds:
            name = crd.removeprefix("crd/")
            wait_for(lambda: established(name), timeout=timeout, what=f"CRD {name} Established")  # noqa: B023

    def kubectl_argv(self, *args: str) -> list[str]:
        """``[kubectl, --kubeconfig, <admin kubeconfig>, *args]``."""
        return [str(self.kubectl), "--kubeconfig", str(self.kubeconfig), *args]

    def ssl_context(self) -> ssl.SSLContext:
        """Client TLS context trusting the test CA and presenting the admin cert."""
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        ctx.load_cert_chain(str(self.client_cert), str(self.client_key))
        return ctx

    def apiserver_log_tail(self, lines: int = 40) -> str:
        return log_tail(self.apiserver_log, lines)

    def etcd_log_tail(self, lines: int = 40) -> str:
        return log_tail(self.etcd_log, lines)

    def controller_manager_log_tail(self, lines: int = 40) -> str:
        return log_tail(self.controller_manager_log, lines)

    # -- internals ----------------------------------------------------------

    @staticmethod
    def _process(name: str, log_path: Path, stop_timeout: float) -> ServerProcess:
        return ServerProcess(name, log_path, stop_timeout=stop_timeout, error=ControlPlaneError)

    def pids(self) -> dict[str, int]:
        """The running processes' ids by name (``etcd``, ``kube-apiserver``, …), for
        benchmarks that sample their memory and CPU."""
        return {
            proc.name: proc.pid
            for proc in reversed(self._procs())
            if proc.running and proc.pid is not None
        }

    def _procs(self) -> tuple[ServerProcess, ...]:
        """All processes, in stop order."""
        return (self._controller_manager, self._apiserver, self._etcd)

    def _stop_apiserver_locked(self) -> None:
        try:
            self._controller_manager.stop()
        finally:
            self._apiserver.stop()

    def _stop_locked(self) -> None:
        errors: list[ControlPlaneError] = []
        for proc in self._procs():
            try:
                proc.stop()
            except ControlPlaneError as e:
                errors.append(e)
        _LIVE.discard(self)
        if errors:
            raise errors[0]

    def _etcd_argv(self) -> list[str]:
        client = self.etcd_url
        peer = f"http://{_HOST}:{self.etcd_peer_port}"
        return [
            str(self.bin_dir / "etcd"),
            "--name=hoststate-test",
            f"--data-dir={self.etcd_data_dir}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=hoststate-test={peer}",
            "--initial-cluster-state=new",
            "--unsafe-no-fsync",  # test data; much faster on slow disks
            "--log-level=warn",
            *self.extra_etcd_args,
        ]

    def _apiserver_argv(self) -> list[str]:
        return [
            str(self.bin_dir / "kube-apiserver"),
            f"--etcd-servers={self.etcd_url}",
            f"--bind-address={_HOST}",
            f"--advertise-address={_HOST}",
            f"--secure-port={self.apiserver_port}",
            f"--cert-dir={self.pki_dir}",
            f"--tls-cert-file={self.serving_cert}",
            f"--tls-private-key-file={self.serving_key}",
            f"--client-ca-file={self.ca_file}",
            f"--service-account-issuer={_SERVICE_ACCOUNT_ISSUER}",
            f"--service-account-key-file={self.sa_pub}",
            f"--service-account-signing-key-file={self.sa_key}",
            f"--api-audiences={_SERVICE_ACCOUNT_ISSUER}",
            "--authorization-mode=RBAC",
            f"--service-cluster-ip-range={_SERVICE_CIDR}",
            "--allow-privileged=true",
            # Loopback cannot be a Service endpoint (validation rejects
            # 127.0.0.0/8), so don't maintain Endpoints for "kubernetes".
            "--endpoint-reconciler-type=none",
            "--profiling=false",
            *self.extra_apiserver_args,
        ]

    def _controller_manager_argv(self) -> list[str]:
        return [
            str(self.bin_dir / "kube-controller-manager"),
            f"--kubeconfig={self.controller_manager_kubeconfig}",
            f"--controllers={','.join(_CONTROLLERS)}",
            "--leader-elect=false",
            "--use-service-account-credentials=false",
            f"--root-ca-file={self.ca_file}",
            f"--bind-address={_HOST}",
            f"--secure-port={self.controller_manager_port}",
            # Serve /healthz with the apiserver's cert (SAN 127.0.0.1, our CA)
            # instead of writing a self-signed one, so the probe can verify it.
            f"--tls-cert-file={self.serving_cert}",
            f"--tls-private-key-file={self.serving_key}",
            "--profiling=false",
            *self.extra_controller_manager_args,
        ]

    def _start_etcd(self) -> None:
        self._etcd.start(self._etcd_argv(), self.workdir, die_with_parent=self.die_with_parent)
        self._etcd.wait_ready(
            http_probe(
                f"{self.etcd_url}/health",
                timeout=2,
                ready=lambda body: '"health":"true"' in body.decode().replace(" ", ""),
            ),
            timeout=self.etcd_ready_timeout,
            not_ready=f"not healthy at {self.etcd_url}/health",
        )

    def _start_apiserver(self) -> None:
        self._apiserver.start(
            self._apiserver_argv(), self.workdir, die_with_parent=self.die_with_parent
        )

        def etcd_died() -> str | None:
            if self._etcd.running:
                return None
            return (
                f"etcd died while kube-apiserver was starting; "
                f"log {self.etcd_log}:\n{self.etcd_log_tail()}"
            )

        self._apiserver.wait_ready(
            http_probe(f"{self.url}/readyz", timeout=5, context=self.ssl_context()),
            timeout=self.apiserver_ready_timeout,
            not_ready=f"not ready at {self.url}/readyz",
            interval=0.2,
            fatal=etcd_died,
        )

    def _start_controller_manager(self) -> None:
        self._controller_manager.start(
            self._controller_manager_argv(), self.workdir, die_with_parent=self.die_with_parent
        )
        # /healthz is in --authorization-always-allow-paths and anonymous
        # requests are allowed, so no client cert is needed.
        url = f"https://{_HOST}:{self.controller_manager_port}/healthz"
        trust = ssl.create_default_context(cafile=str(self.ca_file))
        self._controller_manager.wait_ready(
            http_probe(url, timeout=5, context=trust),
            timeout=self.controller_manager_ready_timeout,
            not_ready=f"not healthy at {url}",
            interval=0.2,
        )

    def _write_pki(self) -> None:
        self.pki_dir.mkdir(parents=True, exist_ok=True)
        ca_key, ca_cert = _make_ca()
        service_ip = next(ipaddress.IPv4Network(_SERVICE_CIDR).hosts())  # 10.0.0.1
        sans: list[x509.GeneralName] = [
            x509.DNSName("localhost"),
            x509.DNSName("kubernetes"),
            x509.DNSName("kubernetes.default"),
            x509.DNSName("kubernetes.default.svc"),
            x509.DNSName("kubernetes.default.svc.cluster.local"),
            x509.IPAddress(ipaddress.IPv4Address(_HOST)),
            x509.IPAddress(ipaddress.IPv6Address("::1")),
            x509.IPAddress(service_ip),
        ]
        serving_key, serving = _make_leaf(
            ca_key, ca_cert, _name("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH, sans
        )
        admin_key, admin = _make_leaf(
            ca_key, ca_cert, _name("admin", "system:masters"), ExtendedKeyUsageOID.CLIENT_AUTH
        )
        kcm_key, kcm = _make_leaf(
            ca_key,
            ca_cert,
            _name("system:kube-controller-manager", "system:masters"),
            ExtendedKeyUsageOID.CLIENT_AUTH,
        )
        sa_key = _new_key()
        _write_key(self.pki_dir / "ca.key", ca_key)
        _write_key(self.serving_key, serving_key)
        _write_key(self.client_key, admin_key)
        _write_key(self.controller_manager_key, kcm_key)
        _write_key(self.sa_key, sa_key)
        self.sa_pub.write_bytes(
            sa_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        _write_cert(self.serving_cert, serving)
        _write_cert(self.client_cert, admin)
        _write_cert(self.controller_manager_cert, kcm)
        _write_cert(self.ca_file, ca_cert)  # last: its presence means "PKI complete"

    def _write_kubeconfig(self, path: Path, user: str, cert: Path, key: Path) -> None:
        # Double-quoted YAML scalars; absolute paths so the file works from any cwd.
        def q(value: object) -> str:
            return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'

        path.write_text(
            "apiVersion: v1\n"
            "kind: Config\n"
            "clusters:\n"
            "- name: hoststate-test\n"
            "  cluster:\n"
            f"    server: {q(self.url)}\n"
            f"    certificate-authority: {q(self.ca_file)}\n"
            "users:\n"
            f"- name: {q(user)}\n"
            "  user:\n"
            f"    client-certificate: {q(cert)}\n"
            f"    client-key: {q(key)}\n"
            "contexts:\n"
            "- name: hoststate-test\n"
            "  context:\n"
            "    cluster: hoststate-test\n"
            f"    user: {q(user)}\n"
            "    namespace: default\n"
            "current-context: hoststate-test\n"
        )
        path.chmod(0o600)
