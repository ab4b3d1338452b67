"""``cute-bind cache warm`` over a grid, and signed bundles (``cache export`` / ``import``): issue 41 item 4."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.optional import torch_or_skip

torch_or_skip()  # (pytest.importorskip would find the DSL's own torch.py once cutlass is imported)

import cute_bind  # noqa: E402
from cute_bind.cache import bundle as bundle_module  # noqa: E402
from cute_bind.cache.grid import parse_axis, warm_grid  # noqa: E402
from tests.child import child_env  # noqa: E402

GRID = """\
import torch
import cutlass
import cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack


@cute.jit
def scale(a: cute.Tensor, f: cutlass.Constexpr):
    for i in range(cute.size(a)):
        a[i] = a[i] * f


def compile_scale(n, f):
    return cute.compile(scale, from_dlpack(torch.zeros(n)), f)


def launch_without_gpu():
    cute.compile(scale, from_dlpack(torch.zeros(4)), 7.0)
    raise RuntimeError("no GPU here")


CONFIGS = [launch_without_gpu, (compile_scale, (2, 3.0)), (compile_scale, (), {"n": 3, "f": 3.0})]
"""


@pytest.fixture
def grid_module(tmp_path, cache_dir):
    path = tmp_path / "gridmod" / "cb_grid_kernels.py"
    path.parent.mkdir()
    path.write_text(GRID)
    yield str(path)
    sys.modules.pop("cb_grid_kernels", None)


@pytest.fixture
def key_file(tmp_path):
    path = tmp_path / "keys" / "ship.key"
    path.parent.mkdir()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"0123456789abcdef0123456789abcdef")
    os.close(fd)
    return str(path)


@pytest.mark.parametrize(
    "text,expected",
    [("n=[1,2]", ("n", [1, 2])), ("causal=[false,true]", ("causal", [False, True])), ('d=["a"]', ("d", ["a"]))],
)
def test_parse_axis(text, expected):
    assert parse_axis(text) == expected


@pytest.mark.parametrize("text", ["n", "n=", "n=[]", "n=3", "1n=[1]", "n=[1,", "=[]"])
def test_parse_axis_refuses(text):
    with pytest.raises(cute_bind.CacheSettingError, match="CB609"):
        parse_axis(text)


def test_warm_a_grid_then_every_point_hits(grid_module):
    import io

    target = f"{grid_module}:compile_scale"
    axes = [parse_axis("n=[4,8]"), parse_axis("f=[1.0,2.0]")]
    stream = io.StringIO()
    first = warm_grid(target, axes, progress=stream)
    assert [r.outcomes for r in first] == [("compiled",)] * 4 and all(r.error is None for r in first)
    assert [r.label for r in first] == ["n=4, f=1.0", "n=4, f=2.0", "n=8, f=1.0", "n=8, f=2.0"]
    assert stream.getvalue().count("\n") == 4 and "4/4" in stream.getvalue()
    again = warm_grid(target, axes)
    assert [r.outcomes for r in again] == [("hit",)] * 4


def test_a_list_target_and_a_configuration_that_raises_after_compiling(grid_module):
    results = warm_grid(f"{grid_module}:CONFIGS")
    assert [r.outcomes for r in results] == [("compiled",), ("compiled",), ("compiled",)]
    assert results[0].error == "RuntimeError: no GPU here" and results[1].error is None


def test_parallel_workers_fill_the_same_folder(grid_module, cache_dir):
    target = f"{grid_module}:compile_scale"
    axes = [parse_axis("n=[5,6,7]"), parse_axis("f=[4.0]")]
    results = warm_grid(target, axes, workers=2)
    assert sorted(r.outcomes for r in results) == [("compiled",)] * 3
    assert len(cute_bind.cache.info()) == 3
    assert [r.outcomes for r in warm_grid(target, axes)] == [("hit",)] * 3


def test_the_command_line(grid_module, cache_dir, key_file, tmp_path):
    env = child_env(CUTE_BIND_CACHE_DIR=str(cache_dir))
    run = lambda *a: subprocess.run([sys.executable, "-m", "cute_bind", "cache", *a], env=env, capture_output=True, text=True, timeout=600)  # noqa: E731
    warm = run("warm", f"{grid_module}:compile_scale", "--grid", "n=[4]", "--grid", "f=[1.0,5.0]", "--workers", "2")
    assert warm.returncode == 0, warm.stderr
    assert "warmed 2 configurations" in warm.stdout and "2 compiled" in warm.stdout and "2/2" in warm.stderr
    bundle = tmp_path / "warm.bundle"
    out = run("export", str(bundle), "--key-file", key_file)
    assert out.returncode == 0 and "exported 2 entries" in out.stdout, out.stderr
    other = tmp_path / "other-cache"
    imported = run("import", str(bundle), "--key-file", key_file, "--dir", str(other))
    assert imported.returncode == 0 and "imported 2 entries" in imported.stdout, imported.stderr
    unsigned = run("import", str(bundle), "--dir", str(other))
    assert unsigned.returncode == 2 and "CB614" in unsigned.stderr
    missing = run("warm")
    assert missing.returncode == 2


def _bundle_with_entries(grid_module, key_file, tmp_path, **keys):
    warm_grid(f"{grid_module}:compile_scale", [parse_axis("n=[4]"), parse_axis("f=[1.0,2.0]")])
    path = tmp_path / "b.bundle"
    assert cute_bind.cache.export_bundle(path, **(keys or {"key_file": key_file})) == 2
    return path


def test_an_imported_bundle_serves_another_folder(grid_module, key_file, tmp_path, monkeypatch):
    path = _bundle_with_entries(grid_module, key_file, tmp_path)
    other = tmp_path / "elsewhere"
    assert cute_bind.cache.import_bundle(path, key_file=key_file, root=other) == 2
    monkeypatch.setenv("CUTE_BIND_CACHE_DIR", str(other))
    results = warm_grid(f"{grid_module}:compile_scale", [parse_axis("n=[4]"), parse_axis("f=[1.0,2.0]")])
    assert [r.outcomes for r in results] == [("hit",)] * 2
    assert {e.status for e in cute_bind.cache.info(other)} == {"ok"}


@pytest.mark.parametrize(
    "damage,reason",
    [
        (lambda b: b[: len(b) // 2], "no signature"),  # truncated: the trailer is gone
        (lambda b: b[:40] + bytes([b[40] ^ 1]) + b[41:], "does not verify"),  # one bit of the body
        (lambda b: b"CUTE_BIND BUNDLE 1\n", "no signature"),  # a bundle without a signature
        (lambda b: b"not a bundle at all", "not a cute_bind bundle"),
    ],
    ids=["truncated", "modified", "unsigned", "foreign-file"],
)
def test_unsigned_or_damaged_bundles_are_refused(grid_module, key_file, tmp_path, damage, reason):
    path = _bundle_with_entries(grid_module, key_file, tmp_path)
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(cute_bind.CacheSettingError, match=f"CB614.*{reason}"):
        cute_bind.cache.import_bundle(path, key_file=key_file, root=tmp_path / "x")
    assert not (tmp_path / "x").exists() or cute_bind.cache.info(tmp_path / "x") == []


def test_another_key_is_refused(grid_module, key_file, tmp_path):
    path = _bundle_with_entries(grid_module, key_file, tmp_path)
    other = tmp_path / "keys" / "other.key"
    fd = os.open(other, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"fedcba9876543210fedcba9876543210")
    os.close(fd)
    with pytest.raises(cute_bind.CacheSettingError, match="CB614.*does not verify"):
        cute_bind.cache.import_bundle(path, key_file=str(other), root=tmp_path / "x")


def test_a_key_file_others_can_read_is_refused(grid_module, key_file, tmp_path):
    os.chmod(key_file, 0o644)
    with pytest.raises(cute_bind.cache.UntrustedPath, match="readable by every user"):
        _bundle_with_entries(grid_module, key_file, tmp_path)


def test_a_foreign_bundle_is_refused_naming_the_difference(grid_module, key_file, tmp_path, monkeypatch):
    path = _bundle_with_entries(grid_module, key_file, tmp_path)
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_100a")
    with pytest.raises(cute_bind.CacheSettingError, match="CB615.*CUTE_DSL_ARCH=sm_100a"):
        cute_bind.cache.import_bundle(path, key_file=key_file, root=tmp_path / "x")


def test_export_needs_exactly_one_key(grid_module, key_file, tmp_path):
    with pytest.raises(cute_bind.CacheSettingError, match="CB614"):
        cute_bind.cache.export_bundle(tmp_path / "b", root=None)
    with pytest.raises(cute_bind.CacheSettingError, match="CB614"):
        cute_bind.cache.export_bundle(tmp_path / "b", key_file=key_file, ed25519_key=key_file)


def test_ed25519_signed_bundles(grid_module, key_file, tmp_path):
    pytest.importorskip("cryptography")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    private = ed25519.Ed25519PrivateKey.generate()
    private_file, public_file = tmp_path / "keys" / "sign.pem", tmp_path / "keys" / "sign.pub"
    fd = os.open(private_file, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    os.close(fd)
    public_file.write_bytes(private.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    path = _bundle_with_entries(grid_module, key_file, tmp_path, ed25519_key=str(private_file))
    assert cute_bind.cache.import_bundle(path, ed25519_key=str(public_file), root=tmp_path / "y") == 2
    with pytest.raises(cute_bind.CacheSettingError, match="CB614.*HMAC key"):
        cute_bind.cache.import_bundle(path, key_file=key_file, root=tmp_path / "z")
    stranger = ed25519.Ed25519PrivateKey.generate().public_key()
    public_file.write_bytes(stranger.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    with pytest.raises(cute_bind.CacheSettingError, match="CB614.*does not verify"):
        cute_bind.cache.import_bundle(path, ed25519_key=str(public_file), root=tmp_path / "z")


def test_ed25519_without_cryptography_is_cb616(grid_module, key_file, tmp_path, monkeypatch):
    for name in [n for n in sys.modules if n == "cryptography" or n.startswith("cryptography.")] + ["cryptography"]:
        monkeypatch.setitem(sys.modules, name, None)  # as on a machine without it
    with pytest.raises(cute_bind.OptionalDependencyError, match="CB616"):
        bundle_module._ed25519()
