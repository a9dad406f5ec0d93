"""Certificates and node keys generated on the spot are what Flower and TLS clients accept."""

import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_pem_private_key, load_ssh_private_key
from flwr.cli.supernode.register import try_load_public_key

from fedmosaic.deploy.security import make_node_key, make_tls


def test_the_superlink_certificate_is_signed_by_the_generated_authority_for_loopback(tmp_path: Path) -> None:
    # Execute
    files = make_tls(tmp_path / "tls")

    # Assert
    ca = x509.load_pem_x509_certificate(files.ca_certificate.read_bytes())
    certificate = x509.load_pem_x509_certificate(files.certificate.read_bytes())
    certificate.verify_directly_issued_by(ca)
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    key = load_pem_private_key(files.private_key.read_bytes(), password=None)
    assert key.public_key().public_numbers() == certificate.public_key().public_numbers()


def test_private_keys_are_readable_by_their_owner_only(tmp_path: Path) -> None:
    files = make_tls(tmp_path)
    pair = make_node_key(tmp_path, "node-0")

    assert files.private_key.stat().st_mode & 0o777 == 0o600
    assert pair.private_key.stat().st_mode & 0o777 == 0o600


def test_a_node_key_is_ec_p384_in_the_formats_flower_reads(tmp_path: Path) -> None:
    # Execute
    pair = make_node_key(tmp_path, "node-0")

    # Assert
    private = load_ssh_private_key(pair.private_key.read_bytes(), password=None)
    assert isinstance(private, ec.EllipticCurvePrivateKey)
    assert private.curve.name == "secp384r1"
    assert try_load_public_key(pair.public_key)  # what `flwr supernode register` accepts
    assert pair.public_key.read_text().startswith("ecdsa-sha2-nistp384 ")


def test_every_call_makes_new_keys(tmp_path: Path) -> None:
    assert make_node_key(tmp_path, "a").public_key.read_bytes() != make_node_key(tmp_path, "b").public_key.read_bytes()
