"""A throwaway self-signed certificate for the simulator's TLS port.

agy serves its language server over TLS with a self-signed certificate (docs/wire.md §1); the
simulator does the same so the client's TLS + HTTP/2 path is the one exercised. The key
is written to a fresh private (0700) directory; whoever made it removes it with
:meth:`CertPaths.remove`.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["CertPaths", "make_self_signed_cert"]


@dataclass(frozen=True, slots=True)
class CertPaths:
    """Where a certificate and its private key were written."""

    directory: Path
    certfile: Path
    keyfile: Path

    def remove(self) -> None:
        """Delete the directory holding the certificate and key."""
        shutil.rmtree(self.directory, ignore_errors=True)


def make_self_signed_cert(
    directory: Path | None = None, *, valid_days: int = 30, common_name: str = "localhost"
) -> CertPaths:
    """Generate an EC P-256 key and a certificate for localhost, 127.0.0.1 and ::1.

    ``directory`` defaults to a new private temporary directory.
    """
    if directory is None:
        directory = Path(tempfile.mkdtemp(prefix="agy-sim-tls-"))  # mkdtemp makes it 0700
    else:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    alt_names = x509.SubjectAlternativeName(
        [
            x509.DNSName("localhost"),
            x509.IPAddress(ipaddress.IPv4Address("127.0.0.1")),
            x509.IPAddress(ipaddress.IPv6Address("::1")),
        ]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))  # tolerate small clock skew
        .not_valid_after(now + datetime.timedelta(days=valid_days))
        .add_extension(alt_names, critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    certfile = directory / "cert.pem"
    keyfile = directory / "key.pem"
    certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    # Created 0600 from the start: the key is never readable by others, even briefly.
    fd = os.open(keyfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key_pem)
    return CertPaths(directory=directory, certfile=certfile, keyfile=keyfile)
