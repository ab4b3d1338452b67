"""The catalog: defined once, stable codes, structured errors, explain."""

import re
import subprocess
import sys

import pytest

import cute_bind
from cute_bind import diagnostics as D
from cute_bind.diagnostics import errors as E

# Every code ever published. Codes are never reused or deleted, only retired:
# this list only grows.
KNOWN_CODES = [
    "CB101", "CB102", "CB103", "CB104", "CB105", "CB106", "CB107", "CB108", "CB109", "CB110", "CB111", "CB112", "CB113", "CB116", "CB117",
    "CB201", "CB202", "CB203", "CB204", "CB205", "CB206", "CB207", "CB208", "CB209", "CB210",
    "CB211", "CB212", "CB213", "CB214", "CB215",
    "CB216", "CB217", "CB218",
    "CB301", "CB302", "CB303", "CB304", "CB305", "CB310",
    "CB401", "CB402", "CB403", "CB404",
    "CB405", "CB406",
    "CB501", "CB502", "CB503", "CB504",
    "CB801", "CB802", "CB803", "CB804", "CB805", "CB806",
    "CB701", "CB702", "CB703", "CB704", "CB705", "CB706",
    "CB114", "CB115", "CB225", "CB306", "CB307", "CB308", "CB309",  # issue 11: optional slots, compiled argument types, TVM-FFI
    "CB220", "CB221",  # calls: the left-out stream
    "CB601", "CB602",  # compiling and specializing
    "CB605", "CB606", "CB607", "CB608", "CB609",
    "CB118",  # a user's own wrapper with nothing jitted under it
    "CB707",  # register_autograd after the op was traced
    "CB119",  # a scalar default its slot does not take
    "CB126",  # a source file the static tools cannot check (not a regular file, too big or too deep)
    "CB125", "CB230", "CB231", "CB232", "CB233",  # structures and unions of several kinds
    "CB315",  # no compile() takes a call whose own compile failed (specializations as guards)
    "CB226",  # a compile-only value (a fake tensor or stream) where a launch needs a real one
    "CB610", "CB611", "CB612", "CB613",  # the disk cache's trust checks
    "CB614", "CB615", "CB616",  # signed cache bundles (cute-bind cache export/import)
    "CB708",  # a torch op's written tensor overlapping itself, another written tensor or an input
    "CB234",  # a plain tuple of another arity given for a NamedTuple parameter
    "CB316",  # a dataclass a TVM-FFI function's call passes as an opaque object (issue 40 item 2)
    "CB127",  # @cute_bind.kernel on a method in its class body (the kernel is made per object)
    "CB901", "CB902", "CB903", "CB904", "CB905", "CB906", "CB907", "CB908", "CB909", "CB910", "CB911",  # cute_bind.jax (issue 42)
]  # fmt: skip


def test_no_code_deleted():
    missing = [c for c in KNOWN_CODES if c not in D.CATALOG]
    assert not missing, f"codes deleted from the catalog (retire them instead): {missing}"


def test_new_codes_are_added_to_known_list():
    assert set(D.CATALOG) == set(KNOWN_CODES), "add new codes to KNOWN_CODES"


@pytest.mark.parametrize("code", KNOWN_CODES)
def test_entry_is_complete(code):
    d = D.CATALOG[code]
    assert re.fullmatch(r"CB[1-9]\d\d", d.code)
    assert re.fullmatch(r"[a-z0-9-]+", d.slug)
    assert d.summary.endswith(".") and "\n" not in d.summary
    for text in (d.explanation, d.example, d.fix, d.message):
        assert text.strip()
    assert issubclass(d.error_class, E.CuteBindError)
    assert issubclass(d.error_class, (TypeError, ValueError, RuntimeError, ImportError, Warning))  # Warning: CB503, CB6xx cache


def test_slugs_unique():
    slugs = [d.slug for d in D.CATALOG.values()]
    assert len(slugs) == len(set(slugs))


@pytest.mark.parametrize(
    "code, builtin",
    [
        ("CB101", TypeError),
        ("CB204", TypeError),
        ("CB205", ValueError),
        ("CB206", ValueError),
        ("CB401", RuntimeError),
        ("CB402", RuntimeError),
        ("CB501", RuntimeError),
        ("CB701", ImportError),
        ("CB705", RuntimeError),
    ],
)
def test_error_classes_subclass_builtins(code, builtin):
    err = D.error(D.CATALOG[code], kernel="k", parameter="p", expected="x", got="y")
    assert isinstance(err, builtin)
    assert isinstance(err, cute_bind.CuteBindError)


def test_error_carries_structured_fields():
    err = D.error(D.WRONG_KIND, kernel="scale", parameter="alpha", expected="a float", got="str 'x'")
    assert (err.code, err.kernel, err.parameter, err.expected, err.got) == ("CB204", "scale", "alpha", "a float", "str 'x'")
    assert err.diagnostic is D.WRONG_KIND
    assert isinstance(err, cute_bind.PreparedLaunchError)
    text = str(err)
    for part in ("[CB204]", "scale", "alpha", "a float", "str 'x'", "fix:", "explain CB204"):
        assert part in text


@pytest.mark.parametrize("code", [c for c in KNOWN_CODES if not D.CATALOG[c].retired])
def test_every_error_carries_its_fix(code):
    """``.fix`` is the entry's fix for this occurrence (its fields filled in), and the message shows it.

    tests/diagnostics/test_catalog_examples.py checks the same on the error each example really raises.
    """
    d = D.CATALOG[code]
    fields = {"kernel": "scale", "parameter": "alpha", "expected": "a float", "got": "str 'x'", "conversion": "Use float(x)."}
    err = D.error(d, **fields)
    rendered = " ".join(d.fix.format(**fields).split())
    assert rendered and err.fix == rendered
    assert f"\n  fix: {rendered}\n" in str(err)


def test_lookup_case_insensitive_and_unknown():
    assert cute_bind.lookup("cb204") is D.WRONG_KIND
    with pytest.raises(KeyError, match="unknown diagnostic code"):
        cute_bind.lookup("CB999")


def test_raise_sites_use_catalog_entries_only():
    # Every D.error(...) call in the package names a catalog entry, never a literal message.
    import pathlib

    pkg = pathlib.Path(cute_bind.__file__).parent
    names = {name for name, v in vars(D).items() if isinstance(v, D.Diagnostic)}
    for path in pkg.rglob("*.py"):
        for m in re.finditer(r"D\.error\(\s*([A-Za-z_.\[\]\"']+)", path.read_text()):
            ref = m.group(1).rstrip(",")
            assert ref.startswith("D.") or ref in ("diagnostic", "found.diagnostic"), (path.name, ref)
            if ref.startswith("D."):
                assert ref[2:] in names, (path.name, ref)


def test_explain_cli_prints_entry():
    out = subprocess.run([sys.executable, "-m", "cute_bind", "explain", "CB205"], capture_output=True, text=True, check=True).stdout
    d = D.CATALOG["CB205"]
    assert out.startswith("CB205 integer-out-of-range")
    assert d.summary in out and "Example:" in out and "Fix:" in out


def test_explain_cli_lists_and_rejects_unknown():
    out = subprocess.run([sys.executable, "-m", "cute_bind", "explain", "--list"], capture_output=True, text=True, check=True).stdout
    assert all(code in out for code in KNOWN_CODES)
    bad = subprocess.run([sys.executable, "-m", "cute_bind", "explain", "CB000"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown diagnostic code" in bad.stderr


def test_retired_codes_stay_and_say_so():
    for code in ("CB103", "CB105"):
        entry = D.CATALOG[code]
        assert entry.retired and "retired" in entry.summary.lower()
        assert "(retired)" in D.render_entry(entry)


_PLACEHOLDER = re.compile(r"\{[a-z_]+\}")


@pytest.mark.parametrize("code", KNOWN_CODES)
def test_pages_and_explain_show_no_raw_placeholders(code):
    """Without an occurrence, a template's fields read as words to fill in (<expected>), never {expected}."""
    import importlib.util
    from pathlib import Path

    d = D.CATALOG[code]
    assert not _PLACEHOLDER.search(D.render_entry(d)), code
    assert D.render_template("Pass {expected} to '{parameter}'.") == "Pass <expected> to '<parameter>'."
    pytest.importorskip("mkdocs", reason="the docs hook renders pages with mkdocs (the docs extra)")
    hook_path = Path(__file__).resolve().parents[2] / "docs" / "hooks" / "catalog.py"
    spec = importlib.util.spec_from_file_location("docs_catalog_hook", hook_path)
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = hook.render_page(d)
    prose = re.sub(r"```python\n.*?```", "", page, flags=re.S)  # the example is code, not a template
    assert not _PLACEHOLDER.search(prose), code
    assert D.render_template("Pass {expected} to '{parameter}'.") == "Pass <expected> to '<parameter>'."
