"""Imported first by every Ironic process the tests start (its directory is put on their
``PYTHONPATH`` by testbed/ironic_server.py): Ironic's Redfish driver derives each BMC
session's cache key with PBKDF2, 600,000 rounds of SHA-512 over the BMC password, on
every Redfish call (``SessionCache.__init__`` in ironic/drivers/modules/redfish/utils.py,
Ironic 39.0.0). With the tests' short polling intervals that derivation took two thirds
of the Ironic worker's CPU in the servicing run (py-spy), on a machine where every test
shares two cores.

``hashlib.pbkdf2_hmac`` is a pure function: remembering its answers for the few
passwords a test uses gives Ironic the very same keys, so the session cache behaves as
it does in production (a changed password is a new key, a new session); only the
repeated work is skipped. Nothing else of Ironic is touched."""

from __future__ import annotations

import functools
import hashlib

_derive = hashlib.pbkdf2_hmac


@functools.lru_cache(maxsize=64)
def _remembered(name: str, password: bytes, salt: bytes, rounds: int, length: int | None) -> bytes:
    return _derive(name, password, salt, rounds, length)


def _pbkdf2_hmac(
    hash_name: str, password: bytes, salt: bytes, iterations: int, dklen: int | None = None
) -> bytes:
    return _remembered(hash_name, bytes(password), bytes(salt), iterations, dklen)


hashlib.pbkdf2_hmac = _pbkdf2_hmac
