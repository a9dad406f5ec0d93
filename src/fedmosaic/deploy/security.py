"""Certificates for TLS and keys for SuperNode authentication, generated on the spot.

TLS: a self-signed certificate authority signs the SuperLink's certificate;
SuperNodes and the ``flwr`` command trust the authority. Node authentication:
each SuperNode has an EC P-384 key pair (OpenSSH format, what Flower reads);
its public key is registered with the SuperLink, and the SuperLink refuses
nodes whose key it does not know.
"""

from __future__ import annotations

import datetime
import ipaddress
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VALID_DAYS = 30
"""Lifetime of generated certificates (they serve a trial deployment)."""


@dataclass(frozen=True)
class TlsFiles:
    """PEM files of a TLS set-up.

    Parameters
    ----------
    ca_certificate : Path
        The authority's certificate: what clients trust (``--root-certificates``).
    certificate, private_key : Path
        The SuperLink's certificate and key (``--ssl-certfile``, ``--ssl-keyfile``).
    """

    ca_certificate: Path
    certificate: Path
    private_key: Path


@dataclass(frozen=True)
class NodeKey:
    """A SuperNode's authentication key pair (OpenSSH format)."""

    private_key: Path
    public_key: Path


def make_tls(folder: Path, hosts: tuple[str, ...] = ("127.0.0.1", "localhost")) -> TlsFiles:
    """Create a certificate authority and a SuperLink certificate for ``hosts`` in ``folder``.

    Parameters
    ----------
    folder : Path
        Where the PEM files go (created if missing; keys are readable by the owner only).
    hosts : tuple of str, default ("127.0.0.1", "localhost")
        Addresses and names the SuperLink is reached at (subject alternative names).

    Returns
    -------
    TlsFiles
    """
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP384R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fedmosaic deployment CA")])
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .sign(ca_key, hashes.SHA384())
    )
    key = ec.generate_private_key(ec.SECP384R1())
    names = [_alt_name(host) for host in hosts]
    certificate = (
        _builder(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]), ca_name, key.public_key(), now)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA384())
    )
    files = TlsFiles(folder / "ca.crt", folder / "server.pem", folder / "server.key")
    files.ca_certificate.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    files.certificate.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    _write_private(
        files.private_key,
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )
    return files


def make_node_key(folder: Path, name: str) -> NodeKey:
    """Create an EC P-384 key pair for a SuperNode: ``<name>`` (private) and ``<name>.pub``."""
    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP384R1())
    pair = NodeKey(folder / name, folder / f"{name}.pub")
    _write_private(
        pair.private_key,
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
        ),
    )
    pair.public_key.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    )
    return pair


def make_secret(path: Path) -> Path:
    """Write a random 32-byte secret, readable by its owner only (a SuperNode's SuperExec secret)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_private(path, secrets.token_bytes(32))
    return path


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey, now: datetime.datetime
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
    )


def _alt_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _write_private(path: Path, data: bytes) -> None:
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_bytes(data)
