"""What the static-tool tests share: the corpus, its ``# expect:`` comments and a mypy config.

The corpus files in ``tests/static/corpus`` mark each expected diagnostic with
a ``# expect: CBxxx[, CByyy]`` comment on the line it is reported at.
"""

from __future__ import annotations

import re
import tokenize
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parent / "corpus"
FILES = sorted(CORPUS.glob("corpus_*.py"))

_EXPECT = re.compile(r"#\s*expect:\s*(.+)$")

# The DSL ships type information (py.typed), but analysing it costs ~45 s
# without a cache and the plugin does not need it: the tests skip it (its
# names are Any), as a project may do too.
_MYPY_CONFIG = """\
[mypy]
{plugins}mypy_path = {root}
show_column_numbers = True
error_summary = False
pretty = False
color_output = False

[mypy-cutlass.*]
follow_imports = skip
ignore_missing_imports = True

[mypy-cuda.*]
follow_imports = skip
ignore_missing_imports = True
"""


def expected(path: Path) -> Counter[tuple[str, int]]:
    """``(code, line)`` for every ``# expect: CBxxx[, CByyy]`` comment of a corpus file."""
    found: Counter[tuple[str, int]] = Counter()
    with path.open("rb") as f:
        for tok in tokenize.tokenize(f.readline):
            m = _EXPECT.search(tok.string) if tok.type == tokenize.COMMENT else None
            if m:
                found.update((code, tok.start[0]) for code in re.findall(r"CB\d{3}", m.group(1)))
    return found


def mypy_config(plugin: bool = True) -> str:
    """A ``mypy.ini`` for runs over the corpus, with or without ``plugins = cute_bind.mypy``."""
    return _MYPY_CONFIG.format(plugins="plugins = cute_bind.mypy\n" if plugin else "", root=ROOT)
