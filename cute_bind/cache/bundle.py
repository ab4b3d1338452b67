"""Shipping a warm cache: ``cute-bind cache export`` / ``import`` of a signed bundle of entries.

A bundle holds the entries of a cache folder that this environment can load
(status ``ok``: the same DSL, cute_bind, Python, machine and ``CUTE_DSL_*``
settings) with a manifest naming that environment and the target
architecture, and ends with a signature over everything before it, made with
a key the user provides:

- HMAC-SHA256 under a key file (``--key-file``; the same checks as a shared
  cache's key: outside the cache folder, owned by the user or root, writable
  by nobody else, not readable by every user, 16 to 4096 bytes), which both
  sides hold; or
- Ed25519 (``--ed25519-key``): export signs with a private key (PEM,
  PKCS#8), import verifies with the matching public key (PEM). Needs the
  optional ``cryptography`` package (``pip install cute_bind[sign]`` or
  ``pip install cryptography``); without it CB616.

Import verifies the signature before reading anything else of the file: a
bundle without one, or whose signature does not verify under the key given,
is refused (CB614); a verified bundle made for another environment or
architecture is refused too (CB615), naming what differs. Each entry is then
checked (its key, its environment) and written through the cache's own store
(signed for a shared cache, checksummed for a private one), so the trust
model of the receiving folder applies as to any entry it writes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import struct
import time
from pathlib import Path
from types import ModuleType

from .. import diagnostics as D
from .. import dsl
from . import settings
from .key import environment
from .store import Store, UntrustedPath, load_key

__all__ = ["BUNDLE_MAGIC", "export_bundle", "import_bundle", "read_bundle"]

#: the first bytes of a bundle
BUNDLE_MAGIC = b"CUTE_BIND BUNDLE 1\n"
_U64 = struct.Struct("<Q")
#: a bundle larger than this is not read (a cache is bounded by its size limit, 1 GiB by default)
MAX_BUNDLE = 64 << 30
_SCHEMES = ("hmac-sha256", "ed25519")


def _store(root: str | os.PathLike[str] | None) -> Store:
    path = settings.folder_argument(os.fspath(root), "root") if root is not None else settings.cache_dir()
    key_file = settings.shared_key_file()
    return Store(path, key=None if key_file is None else load_key(key_file, path))


def _manifest() -> dict[str, object]:
    return {"format": 1, "environment": environment(), "arch": dsl.target_arch(), "created": time.time()}


def _ed25519() -> tuple[ModuleType, ModuleType]:
    """cryptography's serialization and ed25519 modules (an optional dependency, imported when a bundle is
    signed or checked with Ed25519; mypy.ini lets it be absent where the package is type-checked)."""
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError as exc:
        raise D.error(
            D.BUNDLE_SIGNER_MISSING,
            expected="the optional 'cryptography' package for Ed25519 signatures (pip install cryptography)",
            got=f"ImportError: {exc}",
        ) from None
    return serialization, ed25519


def _read_small(path: Path, what: str) -> bytes:
    """A public key's file: a regular file of at most 64 KiB, read without following a link."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > 65536:
            raise UntrustedPath(path, f"the {what} is not a regular file of at most 64 KiB", f"pass a PEM {what}", "key")
        return os.read(fd, 65536)
    finally:
        os.close(fd)


def _sign(body: bytes, key_file: Path | None, ed25519_key: Path | None, root: Path) -> dict[str, str]:
    if (key_file is None) == (ed25519_key is None):
        raise D.error(
            D.BUNDLE_UNSIGNED,
            detail="(export)",
            expected="one signing key: key_file= (HMAC-SHA256) or ed25519_key= (a private key)",
            got="both" if key_file is not None else "none",
        )
    if key_file is not None:
        key = load_key(key_file, root)
        return {"scheme": "hmac-sha256", "signature": hmac.new(key, body, hashlib.sha256).hexdigest()}
    assert ed25519_key is not None
    serialization, ed25519 = _ed25519()
    private = serialization.load_pem_private_key(load_key(ed25519_key, root), password=None)
    if not isinstance(private, ed25519.Ed25519PrivateKey):
        raise D.error(D.BUNDLE_UNSIGNED, detail=str(ed25519_key), expected="an Ed25519 private key (PEM)", got=type(private).__name__)
    return {"scheme": "ed25519", "signature": private.sign(body).hex()}


def export_bundle(
    path: str | os.PathLike[str],
    *,
    key_file: str | os.PathLike[str] | None = None,
    ed25519_key: str | os.PathLike[str] | None = None,
    root: str | os.PathLike[str] | None = None,
) -> int:
    """Write the entries of the cache folder (default: :func:`~cute_bind.cache.cache_dir`) that this environment
    loads into a bundle at ``path``, signed with ``key_file`` (HMAC-SHA256) or ``ed25519_key`` (a private
    key); returns how many entries it holds. The file is created new (mode 0600); an existing one is
    replaced atomically."""
    env = environment()
    with _store(root) as store:
        store.ensure()
        entries = []
        for info in store.scan(env):
            if info.status != "ok":
                continue
            r = store.read(info.key, env)
            if r.status == "hit":
                entries.append((info.key, r.header, r.payload))
        chunks = [BUNDLE_MAGIC]
        manifest = json.dumps({**_manifest(), "count": len(entries)}, sort_keys=True).encode()
        chunks += [_U64.pack(len(manifest)), manifest]
        for key, header, payload in entries:
            head = json.dumps({"key": key, "header": header}, sort_keys=True).encode()
            chunks += [_U64.pack(len(head)), head, _U64.pack(len(payload)), payload]
        body = b"".join(chunks)
        trailer = json.dumps(
            _sign(body, Path(key_file) if key_file else None, Path(ed25519_key) if ed25519_key else None, store.root)
        ).encode()
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(body + trailer + _U64.pack(len(trailer)))
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return len(entries)


def _verify(data: bytes, source: str, key_file: Path | None, ed25519_key: Path | None, root: Path) -> bytes:
    """The bundle's body once its signature verifies under the key given; CB614 otherwise. Nothing of the
    body is parsed before."""

    def refuse(got: str) -> D.CuteBindError:
        return D.error(
            D.BUNDLE_UNSIGNED,
            detail=source,
            expected="a bundle signed by `cute-bind cache export` with the key given here",
            got=got,
        )

    if not data.startswith(BUNDLE_MAGIC):
        raise refuse("not a cute_bind bundle")
    if len(data) < len(BUNDLE_MAGIC) + _U64.size:
        raise refuse("no signature (the file ends without one)")
    (n,) = _U64.unpack_from(data, len(data) - _U64.size)
    if n > 4096 or n > len(data) - _U64.size - len(BUNDLE_MAGIC):
        raise refuse("no signature (the file ends without one)")
    body, trailer = data[: len(data) - _U64.size - n], data[len(data) - _U64.size - n : len(data) - _U64.size]
    try:
        sig = json.loads(trailer)
        scheme, signature = sig["scheme"], bytes.fromhex(sig["signature"])
    except (ValueError, KeyError, TypeError):
        raise refuse("no signature (an unreadable trailer)") from None
    if scheme not in _SCHEMES:
        raise refuse(f"an unknown signature scheme {str(scheme)[:40]!r}")
    if key_file is None and ed25519_key is None:
        raise refuse(f"a {scheme} signature, and no key to check it with (pass key_file= or ed25519_key=)")
    if scheme == "hmac-sha256":
        if key_file is None:
            raise refuse("an HMAC-SHA256 signature, and an Ed25519 key to check it with")
        key = load_key(key_file, root)
        if not hmac.compare_digest(hmac.new(key, body, hashlib.sha256).digest(), signature):
            raise refuse("an HMAC-SHA256 signature that does not verify under this key (another key, or a modified file)")
        return body
    if ed25519_key is None:
        raise refuse("an Ed25519 signature, and an HMAC key to check it with")
    serialization, ed25519 = _ed25519()
    public = serialization.load_pem_public_key(_read_small(ed25519_key, "public key"))
    if not isinstance(public, ed25519.Ed25519PublicKey):
        raise refuse(f"an Ed25519 signature, and a {type(public).__name__} to check it with")
    try:
        public.verify(signature, body)
    except Exception:
        raise refuse("an Ed25519 signature that does not verify under this public key (another key, or a modified file)") from None
    return body


def read_bundle(
    path: str | os.PathLike[str],
    *,
    key_file: str | os.PathLike[str] | None = None,
    ed25519_key: str | os.PathLike[str] | None = None,
    root: str | os.PathLike[str] | None = None,
) -> tuple[dict[str, object], list[tuple[str, dict[str, object], bytes]]]:
    """A verified bundle's manifest and entries ``(key, header, payload)``; CB614 (unsigned, or not verified
    under the key given), CB615 (made for another environment)."""
    source = os.fspath(path)
    with open(source, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_BUNDLE:
            raise D.error(D.BUNDLE_UNSIGNED, detail=source, expected=f"a bundle of at most {MAX_BUNDLE} bytes", got=f"{size} bytes")
        data = f.read(size)  # the size checked first: a file growing meanwhile cannot make the read unbounded
    folder = settings.folder_argument(os.fspath(root), "root") if root is not None else settings.cache_dir()
    body = _verify(data, source, Path(key_file) if key_file else None, Path(ed25519_key) if ed25519_key else None, folder)
    offset = len(BUNDLE_MAGIC)

    def take() -> bytes:
        nonlocal offset
        (n,) = _U64.unpack_from(body, offset)
        chunk = body[offset + _U64.size : offset + _U64.size + n]
        if len(chunk) != n:
            raise D.error(D.BUNDLE_UNSIGNED, detail=source, expected="a whole bundle", got="a truncated one (signed as such)")
        offset += _U64.size + n
        return chunk

    manifest = json.loads(take())
    here = {**_manifest(), "created": manifest.get("created")}
    differs = [
        f"{name} {manifest.get('environment', {}).get(name)!r} (here {value!r})"
        for name, value in here["environment"].items()
        if manifest.get("environment", {}).get(name) != value
    ]
    if manifest.get("arch") != here["arch"]:
        differs.append(f"target architecture {manifest.get('arch')!r} (here {here['arch']!r})")
    if differs:
        raise D.error(
            D.BUNDLE_FOREIGN,
            detail=source,
            expected="a bundle made with this GPU architecture, DSL, cute_bind, Python, machine and CUTE_DSL_* settings",
            got="; ".join(differs),
        )
    entries = []
    for _ in range(int(manifest.get("count", 0))):
        head = json.loads(take())
        entries.append((str(head["key"]), dict(head["header"]), take()))
    return manifest, entries


def import_bundle(
    path: str | os.PathLike[str],
    *,
    key_file: str | os.PathLike[str] | None = None,
    ed25519_key: str | os.PathLike[str] | None = None,
    root: str | os.PathLike[str] | None = None,
) -> int:
    """Verify a bundle (:func:`read_bundle`) and write its entries into the cache folder (default:
    :func:`~cute_bind.cache.cache_dir`) through its store; returns how many were written. An entry whose
    header names another key or environment is skipped (it would never load here)."""
    _manifest_, entries = read_bundle(path, key_file=key_file, ed25519_key=ed25519_key, root=root)
    env = environment()
    written = 0
    with _store(root) as store:
        store.ensure()
        for key, header, payload in entries:
            if header.get("key") != key or header.get("env") != env or header.get("size") != len(payload):
                continue
            if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
                continue  # an entry's name in the folder is its key: nothing else is written
            store.write(key, header, payload)
            written += 1
    return written
