"""MkDocs hook: the diagnostics catalog, generated from ``cute_bind.CATALOG`` at build time.

Nothing about a diagnostic is written by hand in ``docs/``: this hook adds

- ``diagnostics/index.md``: every code, grouped by range, with its summary;
- ``diagnostics/CBnnn.md``: one page per code (what, why, example, fix),

as generated files, and replaces the ``Diagnostics`` entry of the nav in
``mkdocs.yml`` by the index plus one entry per code. An example that only
``raise cute_bind.error(...)`` (the condition cannot be produced on an
ordinary machine) is labelled as an illustration; every other example is
runnable and raises its own code (``tests/diagnostics/test_catalog_examples.py`` runs them
all).

Restart ``mkdocs serve`` after editing the catalog: the hook reads it once per
process.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

# MkDocs restores sys.path after loading a hook, so import the package now
# (from this checkout); it stays in sys.modules. It does not import the DSL.
_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))
import cute_bind  # noqa: E402

#: Directory of the generated pages, relative to docs/.
SECTION = "diagnostics"
#: The nav entry (in mkdocs.yml) that the hook expands.
NAV_TITLE = "Diagnostics"
#: Marker of examples that only raise the error to show it.
ILLUSTRATION_MARKER = "raise cute_bind.error("
ILLUSTRATION_LABEL = "illustration (condition cannot be produced here)"
RUNNABLE_LABEL = "runnable example"

#: Code ranges: each one's name and when its diagnostics are raised, from the
#: table of the range modules (cute_bind/diagnostics/codes/__init__.py RANGES).
RANGES = {digit: (rng.title, rng.when) for digit, rng in cute_bind.diagnostics.codes.RANGES.items()}
_BUILTINS = (TypeError, ValueError, RuntimeError, ImportError, RuntimeWarning)


def catalog() -> dict[str, Any]:
    """``cute_bind.CATALOG`` (imported from this checkout)."""
    return dict(cute_bind.CATALOG)


def is_illustration(diagnostic: Any) -> bool:
    return ILLUSTRATION_MARKER in diagnostic.example


def page_path(code: str) -> str:
    return f"{SECTION}/{code}.md"


def _range(code: str) -> tuple[str, str]:
    digit = code[2:3]
    if digit not in RANGES:  # a nameless group in the nav ("CB9xx: CB9xx"): a new range is a module and a row of RANGES
        raise RuntimeError(f"{code}: the range CB{digit}xx has no name in cute_bind/diagnostics/codes/__init__.py RANGES")
    return RANGES[digit]


def _code_span(text: str) -> str:
    """Inline code for any text (backticks inside are fenced with longer runs)."""
    text = " ".join(text.split())
    run = 1
    while "`" * run in text:
        run += 1
    fence = "`" * run
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _raised_as(diagnostic: Any) -> str:
    cls = diagnostic.error_class
    builtin = next((b.__name__ for b in cls.__mro__ if b in _BUILTINS), None)
    link = f"[`{cls.__name__}`][cute_bind.{cls.__name__}]"
    return f"{link} (a `{builtin}`)" if builtin else link


def render_page(diagnostic: Any) -> str:
    """The Markdown page of one catalog entry."""
    d = diagnostic
    group, when = _range(d.code)
    lines = [f"# {d.code} `{d.slug}`", ""]
    if d.retired:
        lines += ['!!! warning "Retired"', "    cute_bind no longer raises this diagnostic; the code stays reserved.", ""]
    lines += [
        f"- **Range:** CB{d.code[2:3]}xx {group}, {when}",
        f'- **Raised as:** {_raised_as(d)}, a [`CuteBindError`][cute_bind.CuteBindError] with `.code == "{d.code}"`',
        f"- **Message:** {_code_span('[' + d.code + '] ' + cute_bind.diagnostics.render_template(d.message))}",
        f"- **In a terminal:** `python -m cute_bind explain {d.code}`",
        "",
        "## What",
        "",
        d.summary,
        "",
        "The message names the kernel and the parameter concerned; the words in angle",
        "brackets in the template above are filled in from the actual call.",
        "",
        "## Why",
        "",
        d.explanation,
        "",
        "## Example",
        "",
    ]
    if is_illustration(d):
        lines += [
            f'!!! note "Example: {ILLUSTRATION_LABEL}"',
            "    The condition behind this diagnostic cannot be produced on an ordinary",
            "    machine, so this example raises the error directly, to show the message",
            "    and the exception class you would catch.",
            "",
        ]
    else:
        lines += [
            f'!!! example "Example: {RUNNABLE_LABEL}"',
            f"    Save it as a file and run it: it raises `{d.code}`. (The CuTe DSL needs",
            "    functions defined in a source file, so paste it into a `.py` file rather",
            "    than a REPL.)",
            "",
        ]
    fix = cute_bind.diagnostics.render_template(d.fix)
    lines += ["```python", d.example.rstrip("\n"), "```", "", "## Fix", "", fix, ""]
    if fix != d.fix:
        lines += ["(Words in angle brackets are filled in from the actual error.)", ""]
    lines += ["---", "", "[All diagnostics](index.md)", ""]
    return "\n".join(lines)


def _sample_message(entries: dict[str, Any]) -> str:
    """The message CB204's runnable example raises (``handle.launch(addr, 2.5)`` for an Int32 slot), built by
    cute_bind.error from the catalog template with every field the launch fills in: the refusing kind's
    conversion sentence included (left out, the template's ``{conversion}`` read "?" on the page).
    tests/docs/test_docs.py compares it with the error the example raises."""
    d = entries["CB204"]
    expected = "an int in [-2147483648, 2147483647] for an Int32 slot"
    conversion = cute_bind.diagnostics.WRONG_KIND_CONVERSIONS["integer"]
    return str(cute_bind.error(d, kernel="fill", parameter="value", expected=expected, got="float 2.5", conversion=conversion))


def render_index(entries: dict[str, Any]) -> str:
    """The Markdown index of the catalog."""
    lines = [
        "# Diagnostics catalog",
        "",
        "Every error cute_bind raises comes from this catalog. Each has a stable code",
        "(`CB101`...), a message that names the kernel and parameter concerned, and a",
        "concrete fix. Codes are never reused: an entry that no longer applies is marked",
        "retired and keeps its page.",
        "",
        "```text",
        _sample_message(entries),
        "```",
        "",
        "In code, branch on the structured fields rather than on the text: every error is a",
        "[`CuteBindError`][cute_bind.CuteBindError] with `.code`, `.kernel`, `.parameter`,",
        "`.expected`, `.got`, `.fix` and `.diagnostic` (the catalog entry), and also a",
        "subclass of the builtin you would naturally catch (`TypeError`, `ValueError` or",
        "`RuntimeError`). From the shell, `python -m cute_bind explain CB204` prints an entry.",
        "",
        f"Examples marked *{ILLUSTRATION_LABEL}* raise the error directly because the",
        "condition needs a GPU, a different DSL release or a race to occur; every other",
        "example runs as it is and raises its code.",
        "",
    ]
    by_range: dict[str, list[Any]] = {}
    for code in sorted(entries):
        by_range.setdefault(code[2:3], []).append(entries[code])
    for digit, group_entries in by_range.items():
        group, when = _range(f"CB{digit}")
        lines += [f"## CB{digit}xx: {group}", "", f"Diagnostics {when}." if when else "", ""]
        lines += ["| Code | Name | Summary | Raised as | Example |", "| --- | --- | --- | --- | --- |"]
        for d in group_entries:
            kind = "illustration" if is_illustration(d) else "runnable"
            name = f"`{d.slug}`" + (" (retired)" if d.retired else "")
            lines.append(f"| [{d.code}]({d.code}.md) | {name} | {_cell(d.summary)} | {d.error_class.__name__} | {kind} |")
        lines.append("")
    return "\n".join(lines)


def _nav_entries(entries: dict[str, Any]) -> list[Any]:
    groups: dict[str, list[Any]] = {}
    for code in sorted(entries):
        d = entries[code]
        group, _ = _range(code)
        groups.setdefault(f"CB{code[2:3]}xx {group}", []).append({f"{code} {d.slug}": page_path(code)})
    return [f"{SECTION}/index.md", *({title: items} for title, items in groups.items())]


def on_config(config: Any, **kwargs: Any) -> Any:
    nav = config.get("nav") or []
    entries = catalog()
    for i, item in enumerate(nav):
        if isinstance(item, dict) and NAV_TITLE in item:
            nav[i] = {NAV_TITLE: _nav_entries(entries)}
            break
    return config


def on_files(files: Files, config: Any, **kwargs: Any) -> Files:
    entries = catalog()
    generated = {f"{SECTION}/index.md": render_index(entries)}
    generated.update({page_path(code): render_page(d) for code, d in entries.items()})
    for path, content in generated.items():
        existing = files.get_file_from_path(path)
        if existing is not None:
            raise RuntimeError(f"docs/{path} exists but is generated from cute_bind.CATALOG; remove it")
        files.append(File.generated(config, path, content=content))
    return files
