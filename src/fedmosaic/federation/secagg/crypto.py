"""The protocol's cryptography, each piece from a maintained library.

* key pairs and key agreement: ECDH on SECP384R1 with an HKDF-SHA256 derived
  key (``cryptography``, through Flower's ``secure_aggregation`` helpers);
* encryption of the shares between two clients: Fernet (``cryptography``);
* secret sharing: Shamir's scheme over GF(2^128) (``pycryptodome``, through
  Flower's helpers);
* masks: the ChaCha20 keystream (``cryptography``) under a 32-byte key, read
  as unsigned 64-bit integers. Flower's own ``pseudo_rand_gen`` folds its
  seed into 32 bits for NumPy's Mersenne Twister, which is not a
  cryptographic generator, so it is not used.

Nothing here is a cipher, a key agreement or a sharing scheme of our own.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Sequence

import numpy as np
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from flwr.common.secure_aggregation.crypto.shamir import combine_shares, create_shares
from flwr.common.secure_aggregation.crypto.symmetric_encryption import decrypt, encrypt, generate_shared_key
from flwr.supercore.primitives.asymmetric import bytes_to_public_key, generate_key_pairs, public_key_to_bytes

SEED_BYTES = 32
"""Length of a self-mask seed (a ChaCha20 key)."""
SCALAR_BYTES = 48
"""Length of a private key's scalar on Flower's curve (SECP384R1): what is kept and secret-shared."""


def new_key_pair() -> tuple[bytes, bytes]:
    """A fresh ECDH key pair (Flower's curve): ``(private scalar, public key PEM)``.

    The private key travels as its 48-byte scalar, not as PEM, so that its
    Shamir shares are a fifth of the size.
    """
    private, public = generate_key_pairs()
    return private.private_numbers().private_value.to_bytes(SCALAR_BYTES, "big"), public_key_to_bytes(public)


def new_seed() -> bytes:
    """A fresh self-mask seed from the operating system's generator."""
    return secrets.token_bytes(SEED_BYTES)


def is_public_key(data: bytes) -> bool:
    """Whether ``data`` is a public key :func:`agreed_keys` can use.

    Examples
    --------
    >>> is_public_key(new_key_pair()[1]), is_public_key(b"garbage")
    (True, False)
    """
    try:
        bytes_to_public_key(data)
    except ValueError:
        return False
    return True


def agreed_keys(private: bytes, publics: Sequence[bytes]) -> list[bytes]:
    """The keys one party agrees on with each of several others (Fernet-ready): its private scalar with their public keys.

    Examples
    --------
    >>> a, b = new_key_pair(), new_key_pair()
    >>> agreed_keys(a[0], [b[1]]) == agreed_keys(b[0], [a[1]])
    True
    """
    key = ec.derive_private_key(int.from_bytes(private, "big"), ec.SECP384R1())
    return [generate_shared_key(key, bytes_to_public_key(public)) for public in publics]


def seal(key: bytes, plaintext: bytes) -> bytes:
    """``plaintext`` encrypted and authenticated under an agreed key (Fernet)."""
    return encrypt(key, plaintext)


def unseal(key: bytes, ciphertext: bytes) -> bytes:
    """What :func:`seal` encrypted; raises ``cryptography.fernet.InvalidToken`` on a forged ciphertext."""
    return decrypt(key, ciphertext)


def split_secret(secret: bytes, threshold: int, count: int) -> list[bytes]:
    """``count`` Shamir shares of ``secret``, any ``threshold`` of which rebuild it.

    Examples
    --------
    >>> shares = split_secret(b"secret", 2, 3)
    >>> join_shares(shares[1:])
    b'secret'
    """
    return create_shares(secret, threshold, count)


def join_shares(shares: list[bytes]) -> bytes:
    """The secret rebuilt from at least ``threshold`` shares of :func:`split_secret`."""
    return combine_shares(shares)


def mask(key: bytes, length: int) -> np.ndarray:
    """``length`` pseudo-random unsigned 64-bit integers from a key: the ChaCha20 keystream.

    ``key`` is a 32-byte seed or a Fernet key from :func:`agreed_keys` (its
    32 bytes are used). Each key is used for one round only, so the nonce
    is fixed.

    Examples
    --------
    >>> m = mask(bytes(32), 3)
    >>> m.dtype.name, bool((m == mask(bytes(32), 3)).all())
    ('uint64', True)
    """
    raw = key if len(key) == SEED_BYTES else base64.urlsafe_b64decode(key)
    stream = Cipher(algorithms.ChaCha20(raw, bytes(16)), mode=None).encryptor().update(bytes(8 * length))
    return np.frombuffer(stream, dtype="<u8").astype(np.uint64)


def as_array(data: bytes) -> np.ndarray:
    """Bytes as a ``uint8`` array, as messages carry them."""
    return np.frombuffer(data, dtype=np.uint8).copy()


def as_bytes(array: np.ndarray) -> bytes:
    """The bytes a ``uint8`` array of :func:`as_array` holds."""
    return np.asarray(array, dtype=np.uint8).tobytes()
