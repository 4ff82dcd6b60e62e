"""How to reach an Ironic: the endpoint and the credentials, checked before anything starts.

The command line (``demo`` and ``run``) gathers these from flags. Credentials come from
a username flag with a password *file* (a password on the command line would show in
``ps`` and shell history), or from a directory holding ``username`` and ``password``
files: a Kubernetes Secret mounted as a volume, which is how the controller gets them
in a pod without any permission to read Secrets in its own namespace. Every problem is
a :class:`ValueError` whose text names the flag and says how to fix it.

Ironic is reached over https unless it runs on this machine or the operator says the
network between is trusted (``--ironic-allow-http``): every BMC password travels in
the nodes' ``driver_info``, and Ironic's own credentials in the basic-auth header.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from urllib.parse import urlsplit

from .client import without_userinfo
from .health import HEALTH_EVERY
from .provisioner import IronicProvisioner


@dataclass(frozen=True)
class IronicSettings:
    url: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    driver: str | None = None  # one hardware type for every node, e.g. fake-hardware
    poll_delay: float = 2.0
    health_every: float = HEALTH_EVERY  # seconds between health reads of an idle host
    ca_file: str | None = None
    insecure: bool = False
    credentials_dir: str | None = None  # read again when Ironic refuses the credentials

    def provisioner(self, *, workers: int) -> IronicProvisioner:
        """One provisioner for all hosts, with a connection per worker."""
        return IronicProvisioner(
            self.url,
            username=self.username,
            password=self.password,
            # the kubelet rewrites a mounted Secret in place: a rotated password is read
            # again after a 401, with no restart
            reread_credentials=(
                partial(_read_credentials_dir, self.credentials_dir)
                if self.credentials_dir
                else None
            ),
            driver=self.driver,
            poll_delay=self.poll_delay,
            health_every=self.health_every,
            max_connections=max(workers, 1),
            ca_file=self.ca_file,
            insecure=self.insecure,
        )


def load_ironic_settings(
    url: str | None,
    *,
    username: str | None = None,
    password_file: str | None = None,
    credentials_dir: str | None = None,
    driver: str | None = None,
    poll_delay: float = 2.0,
    health_every: float = HEALTH_EVERY,
    ca_file: str | None = None,
    insecure: bool = False,
    allow_http: bool = False,
) -> IronicSettings:
    """Settings from the ``--ironic-*`` flags; a ValueError names the flag to fix."""
    if not url:
        raise ValueError(
            "--ironic-url is required with --provisioner ironic, e.g. https://ironic.example:6385"
        )
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"--ironic-url: {without_userinfo(url)!r} is not an http(s) URL; "
            "give the Ironic API endpoint, e.g. https://ironic.example:6385"
        )
    if "@" in parts.netloc:
        raise ValueError(
            "--ironic-url: leave user:password@ out of the URL (it would show in ps, logs "
            "and messages); give them with --ironic-username and --ironic-password-file, "
            "or --ironic-credentials-dir"
        )
    if poll_delay <= 0:
        raise ValueError(f"--ironic-poll-delay must be more than 0 seconds, not {poll_delay:g}")
    if health_every < 0:
        raise ValueError(
            f"--ironic-health-every must be 0 (never) or more seconds, not {health_every:g}"
        )
    if insecure and ca_file is not None:  # the CA file would be silently ignored
        raise ValueError(
            "--ironic-insecure and --ironic-ca-file: give one or the other; "
            "--ironic-insecure skips the verification --ironic-ca-file is for"
        )
    if ca_file is not None and not Path(ca_file).is_file():
        raise ValueError(f"--ironic-ca-file: {ca_file} is not a file")
    if credentials_dir is not None:
        if username is not None or password_file is not None:
            raise ValueError(
                "--ironic-credentials-dir replaces --ironic-username and "
                "--ironic-password-file; give one or the other"
            )
        username, password = _read_credentials_dir(credentials_dir)
    elif password_file is not None:
        if not username:
            raise ValueError("--ironic-password-file needs --ironic-username")
        password = _read(Path(password_file), "--ironic-password-file")
    else:
        password = None
    if username is not None and not username:
        raise ValueError("--ironic-username is empty; leave it out for an Ironic without auth")
    if parts.scheme == "http" and not allow_http and not _loopback(parts.hostname):
        raise ValueError(
            f"--ironic-url: {without_userinfo(url)} is plain http, which would carry every "
            "BMC password (and Ironic's own credentials) in clear; use https:// (with "
            "--ironic-ca-file for a private CA), or add --ironic-allow-http if the network "
            "to Ironic is trusted"
        )
    return IronicSettings(
        url=url,
        username=username or None,
        password=password,
        driver=driver or None,
        poll_delay=poll_delay,
        health_every=health_every,
        ca_file=ca_file,
        insecure=insecure,
        credentials_dir=credentials_dir,
    )


def _loopback(host: str | None) -> bool:
    """An Ironic on this machine (a sidecar, a test): nothing crosses a network."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


def _read_credentials_dir(folder: str) -> tuple[str, str]:
    """The ``username`` and ``password`` files of a mounted Secret; ValueError if unreadable."""
    username = _read(Path(folder) / "username", "--ironic-credentials-dir")
    password = _read(Path(folder) / "password", "--ironic-credentials-dir")
    return username, password


def _read(path: Path, flag: str) -> str:
    """A credential file's text without the trailing newline editors and ``echo`` add."""
    try:
        text = path.read_text().rstrip("\r\n")
    except FileNotFoundError:
        raise ValueError(
            f"{flag}: {path} does not exist; it must hold the Ironic "
            f"{path.name if path.name in ('username', 'password') else 'password'}"
        ) from None
    except OSError as error:
        raise ValueError(f"{flag}: cannot read {path}: {error.strerror}") from None
    if not text:
        raise ValueError(f"{flag}: {path} is empty")
    return text
