"""CurveZMQ key files, read as the CLI reads them (protocol/security/keys.cc).

A secret key file (`gpool admin keygen --out NAME` writes NAME.key, mode 0600):

    public-key = "<40 Z85 characters>"
    secret-key = "<40 Z85 characters>"

A public key file (NAME.pub) holds `public-key = "..."`, or the bare key on its
first line. '#' starts a comment line.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Dict

import zmq

from .errors import FailedPrecondition, InvalidArgument, NotFound

_Z85 = set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#")


def is_z85_key(text: str) -> bool:
    return len(text) == 40 and all(c in _Z85 for c in text)


@dataclass(frozen=True)
class KeyPair:
    public_key: str
    secret_key: str = ""

    def __repr__(self) -> str:  # never print a secret
        return f"KeyPair(public_key={self.public_key!r})"


def generate_key_pair() -> KeyPair:
    # As gpool's C++ keygen (protocol/security/keys.h): drawn again while the
    # secret holds a '%', since the secret is also the HTTP bearer credential
    # and the coordinator's HTTP library percent-decodes header values.
    while True:
        public, secret = zmq.curve_keypair()
        if b"%" not in secret:
            return KeyPair(public.decode("ascii"), secret.decode("ascii"))


def key_pair_of_secret(secret_key: str) -> KeyPair:
    if not is_z85_key(secret_key):
        raise InvalidArgument("not a 40-character Z85 secret key")
    return KeyPair(zmq.curve_public(secret_key.encode("ascii")).decode("ascii"), secret_key)


def _parse_fields(content: str, path: str) -> Dict[str, str]:
    fields: Dict[str, str] = {}
    for line_no, raw_line in enumerate(content.split("\n"), start=1):
        line = raw_line.strip()
        # A bare key first: Z85 has '#' and '=' in its alphabet.
        if is_z85_key(line) and not fields:
            fields[""] = line
            continue
        if not line or line.startswith("#"):
            continue
        name, eq, value = line.partition("=")
        if not eq:
            raise InvalidArgument(f'key file {path} line {line_no}: expected name = "value"')
        name, value = name.strip(), value.strip()
        if len(value) >= 2 and value[0] == '"' and value[-1] == '"':
            value = value[1:-1]
        if name in fields:
            raise InvalidArgument(f"key file {path}: {name} is given twice")
        fields[name] = value
    return fields


def _field(fields: Dict[str, str], name: str, path: str) -> str:
    if name not in fields:
        raise InvalidArgument(f"key file {path} has no {name}")
    if not is_z85_key(fields[name]):
        raise InvalidArgument(f"key file {path}: {name} is not a 40-character Z85 key")
    return fields[name]


def _read_regular(path: str, kind: str) -> "tuple[str, os.stat_result]":
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise FailedPrecondition(f"{kind} file {path} is not a regular file")
            return f.read(65536), st
    except FileNotFoundError as e:
        raise NotFound(f"cannot open {kind} file {path}: {e.strerror}") from None
    except IsADirectoryError:
        raise FailedPrecondition(f"{kind} file {path} is not a regular file") from None
    except PermissionError as e:
        raise FailedPrecondition(f"cannot open {kind} file {path}: {e.strerror}") from None


def read_secret_key_file(path: str) -> KeyPair:
    """The pair in a secret key file; refuses one that group or others may read, like the CLI."""
    content, st = _read_regular(path, "secret key")
    if st.st_mode & 0o077:
        raise FailedPrecondition(f"secret key file {path} has mode {st.st_mode & 0o7777:04o}: group or others "
                                 f"may use it; chmod 600 {path} (or replace the key)")
    fields = _parse_fields(content, path)
    pair = KeyPair(_field(fields, "public-key", path), _field(fields, "secret-key", path))
    # A secret key written beside another's public key would authenticate as someone else.
    if key_pair_of_secret(pair.secret_key).public_key != pair.public_key:
        raise InvalidArgument(f"key file {path}: its public-key is not the secret-key's")
    return pair


def read_public_key_file(path: str) -> str:
    content, _ = _read_regular(path, "public key")
    fields = _parse_fields(content, path)
    if "" in fields:
        return fields[""]
    return _field(fields, "public-key", path)


def write_key_pair(base: str, pair: KeyPair) -> None:
    """BASE.key (0600) and BASE.pub, in the format `gpool admin keygen` writes."""
    fd = os.open(base + ".key", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write("# gpool CurveZMQ secret key file: keep it mode 0600, never copy it off this machine.\n"
                f'public-key = "{pair.public_key}"\nsecret-key = "{pair.secret_key}"\n')
    with open(base + ".pub", "x", encoding="ascii") as f:
        f.write("# gpool CurveZMQ public key: hand it to whoever must admit this key.\n"
                f'public-key = "{pair.public_key}"\n')
