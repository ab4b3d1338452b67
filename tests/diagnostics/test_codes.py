"""The catalog's layout: entries as data in one module per range, in code order, each exported once.

``cute_bind.diagnostics.__all__`` is derived from the range modules (no list of
entry names is kept by hand); these tests keep that derivation honest and the
codes unique, in their range's module, and never reused.
"""

from __future__ import annotations

import re
import types
from pathlib import Path

import pytest

from cute_bind import diagnostics as D
from cute_bind.diagnostics import catalog, codes
from cute_bind.diagnostics.define import entry

#: Retired codes and the entry each was: a retired code stays, retired, with its
#: meaning (never reactivated, never given to another entry). Only grows.
RETIRED = {
    "CB103": "tensor-parameter",
    "CB105": "sequence-parameter",
    "CB115": "tvm-ffi-kernel",
}

#: Public names a range module may bind besides its entries (a star import brings them into D).
NOT_ENTRIES = {"SUPPORTED_DSL_VERSIONS", "WRONG_KIND_CONVERSIONS"}


def _public(module: types.ModuleType) -> list[str]:
    return [name for name in vars(module) if not name.startswith("_")]


def test_every_entry_is_exported_exactly_once() -> None:
    entries = {name: getattr(D, name) for name in catalog.ENTRY_NAMES}
    assert sorted(d.code for d in entries.values()) == sorted(D.CATALOG), "an entry missing from (or extra in) ENTRY_NAMES"
    for name, d in entries.items():
        assert D.__all__.count(name) == 1, name
        assert D.CATALOG[d.code] is d, name
    assert len(D.__all__) == len(set(D.__all__)), [n for n in D.__all__ if D.__all__.count(n) > 1]
    bound = {name for name, value in vars(D).items() if isinstance(value, D.Diagnostic)}
    assert bound == set(catalog.ENTRY_NAMES), "D binds an entry the catalog did not gather, or the reverse"


def test_star_import_binds_every_exported_name() -> None:
    namespace: dict[str, object] = {}
    exec("from cute_bind.diagnostics import *", namespace)
    assert set(D.__all__) <= set(namespace)


@pytest.mark.parametrize("digit", sorted(codes.RANGES))
def test_a_range_module_holds_its_codes_in_code_order(digit: str) -> None:
    rng = codes.RANGES[digit]
    written = [d.code for d in catalog.entries_of(rng).values()]
    assert written, f"CB{digit}xx has no entries"
    assert all(re.fullmatch(rf"CB{digit}\d\d", c) for c in written), written
    assert written == sorted(written), f"{rng.module.__name__}: entries out of code order: {written}"
    assert rng.title and rng.when, digit


@pytest.mark.parametrize("digit", sorted(codes.RANGES))
def test_a_range_module_binds_only_entries(digit: str) -> None:
    """``cute_bind.diagnostics`` star-imports each range module: any other public name would land in D."""
    module = codes.RANGES[digit].module
    extra = [n for n in _public(module) if not isinstance(getattr(module, n), D.Diagnostic) and n not in NOT_ENTRIES]
    assert not extra, f"{module.__name__} binds public names that are not entries (prefix them with _): {extra}"


def test_every_range_module_is_in_the_table() -> None:
    folder = Path(codes.__file__).parent
    files = sorted(p.stem for p in folder.glob("cb*.py"))
    assert files == [codes.RANGES[d].module.__name__.rsplit(".", 1)[1] for d in sorted(codes.RANGES)]
    assert list(codes.RANGES) == sorted(codes.RANGES), "RANGES is in code order"
    assert all(codes.RANGES[d].module.__name__.endswith(f".cb{d}xx") for d in codes.RANGES)


def test_codes_are_unique_and_in_code_order() -> None:
    assert list(D.CATALOG) == sorted(D.CATALOG)
    assert all(code == d.code for code, d in D.CATALOG.items())


def test_retired_codes_stay_retired_with_their_meaning() -> None:
    retired = {code: d.slug for code, d in D.CATALOG.items() if d.retired}
    assert retired == RETIRED, "a retired code came back, or a newly retired one is missing from RETIRED"


def _range(digit: str, **entries: object) -> codes.Range:
    module = types.ModuleType(f"fake.cb{digit}xx")
    vars(module).update(entries)
    return codes.Range(module, "Fake", "raised in a test")


def _d(code: str) -> D.Diagnostic:
    return entry(code, f"slug-{code.lower()}", D.LaunchArgumentError, summary="s.", message="m", explanation="e", example="x", fix="f")


_SAME = _d("CB101")


@pytest.mark.parametrize(
    "ranges, match",
    [
        ({"1": _range("1", A=_d("CB101"), B=_d("CB101"))}, "CB101 defined twice \\(A and B\\)"),
        ({"1": _range("1", A=_SAME, B=_SAME)}, "CB101 defined twice \\(A and B\\)"),
        ({"1": _range("1", A=_d("CB101")), "2": _range("2", A=_d("CB201"))}, "name A bound twice"),
        ({"1": _range("1", A=_d("CB201"))}, "holds the CB1xx codes"),
        ({"1": _range("1", _A=_d("CB101"))}, "private name _A"),
    ],
    ids=["one-code-two-entries", "one-entry-two-names", "name-in-two-modules", "code-outside-its-range", "private-name"],
)
def test_gather_refuses_a_broken_catalog(ranges: dict[str, codes.Range], match: str) -> None:
    with pytest.raises(RuntimeError, match=match):
        catalog.gather(ranges)


def test_gather_orders_by_code_and_names_in_writing_order() -> None:
    by_code, names = catalog.gather({"1": _range("1", B=_d("CB102"), A=_d("CB101")), "2": _range("2", C=_d("CB201"))})
    assert list(by_code) == ["CB101", "CB102", "CB201"]
    assert names == ("B", "A", "C")
