"""``python -m cute_bind cache info|clear|prune|warm|export|import``."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from ..diagnostics.errors import CuteBindError
from . import cache_dir, clear, environment, info, prune, size_limit
from ..settings import CACHE_DIR
from .settings import ENV_DIR, default_dir, folder_argument, parse_size
from .store import STATUSES, EntryInfo, UntrustedPath

__all__ = ["add_arguments", "main"]


def _ship(args: argparse.Namespace, root: str) -> int:
    """``warm``, ``export`` and ``import`` (their errors are the caller's one-line reports)."""
    from .bundle import export_bundle, import_bundle
    from .grid import parse_axis, warm_grid

    if not args.target:
        what = "a target (module:attribute)" if args.action == "warm" else "a bundle file"
        print(f"cute-bind cache {args.action}: expected {what}", file=sys.stderr)
        return 2
    if args.action == "warm":
        CACHE_DIR.set(root)  # the workers' folder too
        results = warm_grid(args.target, [parse_axis(a) for a in args.grid], workers=args.workers, progress=sys.stderr)
        outcomes = [o for r in results for o in r.outcomes]
        failed = [r for r in results if r.error is not None]
        print(
            f"warmed {len(results)} configurations into {root}: "
            + ", ".join(f"{outcomes.count(k)} {k}" for k in ("compiled", "hit", "uncached"))
            + (f"; {len(failed)} raised after compiling what they could" if failed else "")
        )
        return 0 if results and not all(r.error and not r.outcomes for r in results) else 1
    keys = {"key_file": args.key_file, "ed25519_key": args.ed25519_key, "root": root}
    if args.action == "export":
        print(f"exported {export_bundle(args.target, **keys)} entries of {root} to {args.target}")
    else:
        print(f"imported {import_bundle(args.target, **keys)} entries from {args.target} into {root}")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "action",
        choices=("info", "clear", "prune", "warm", "export", "import"),
        help="info: list entries; clear: remove all; prune: clean up and evict to the size limit; "
        "warm TARGET: compile a grid of configurations; export FILE / import FILE: a signed bundle of entries",
    )
    p.add_argument("target", nargs="?", help="warm: module:attribute or file.py:attribute; export/import: the bundle file")
    p.add_argument(
        "--grid", action="append", default=[], metavar="NAME=JSON", help="warm: one axis of the grid, e.g. head_dim=[64,128] (repeatable)"
    )
    p.add_argument("--workers", type=int, default=1, help="warm: worker processes (default 1: this process)")
    p.add_argument("--key-file", help="export/import: an HMAC-SHA256 key file (outside the cache folder, not readable by every user)")
    p.add_argument("--ed25519-key", help="export: an Ed25519 private key (PEM); import: the matching public key (PEM); needs cryptography")
    p.add_argument("--dir", help="cache folder (default: CUTE_BIND_CACHE_DIR, an absolute path, or the user's cache folder); never empty")
    p.add_argument("--max-size", help="prune: size limit such as 512M (default: CUTE_BIND_CACHE_SIZE or 1G)")
    p.add_argument("--older-than", type=_days, metavar="DAYS", help="prune: also remove entries unused for this many days")
    p.add_argument(
        "--other", action="store_true",
        help="prune: also remove the entries this process cannot use (status other-arch or other-version; kept by default: another environment sharing the folder may use them)",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="info: print JSON")


def _days(text: str) -> float:
    try:
        days = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of days") from None
    if not days >= 0:  # also NaN
        raise argparse.ArgumentTypeError(f"{text!r}: the age must be 0 days or more")
    return days


def _size(n: float) -> str:
    for unit in ("B", "K", "M", "G"):
        if n < 1024 or unit == "G":
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.1f}{unit}"
        n /= 1024
    return f"{n:.1f}G"


def _age(seconds: float) -> str:
    for unit, span in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= span:
            return f"{seconds / span:.1f}{unit}"
    return f"{seconds:.0f}s"


def _status(e: EntryInfo) -> str:
    # why an entry is refused or of no use here is worth a column: someone planted or damaged it, or it
    # belongs to another setting or version (then the reason names what differs from this process)
    return f"{e.status} ({e.reason})" if e.status != "ok" and e.reason else e.status


def _counts(entries: list[EntryInfo]) -> str:
    counts = {status: sum(e.status == status for e in entries) for status in STATUSES}
    return ", ".join(f"{n} {status}" for status, n in counts.items() if n)


def _here() -> str:
    """What an entry's status is relative to: this process's DSL and CUTE_DSL_* settings."""
    env = environment()
    return f"nvidia-cutlass-dsl {env['dsl']}, CUTE_DSL_* settings: {env['dsl_env'] or 'none'}"


def main(args: argparse.Namespace) -> int:
    root: str | None = None
    try:
        # --dir "" (a script's unset variable) is refused, never the default folder: clear would empty the
        # user's cache; a relative CUTE_BIND_CACHE_DIR is refused too (CB609, settings.cache_dir)
        root = str(folder_argument(args.dir) if args.dir is not None else cache_dir())
        return _main(args, root)
    except UntrustedPath as exc:  # a folder or key the trust model refuses: one line, with the fix
        why = exc.problem if exc.what == "key" else f"{exc.path} is not trusted: it is {exc.problem}"
        print(f"cute-bind cache {args.action}: {why}; fix: {exc.fix}", file=sys.stderr)
        return 2
    except CuteBindError as exc:  # an invalid setting (CB609): one line, not a traceback
        first = exc.args[0].splitlines()[0].replace(" (kernel '?')", "")  # a setting, not a kernel's
        print(f"cute-bind cache {args.action}: {first}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        raise  # the reader went away: the entry point's own quiet stop
    except OSError as exc:
        # the folder (--dir a file, a folder this user cannot read): one line, not a traceback;
        # any other I/O error (writing the output, say) is not the folder's and propagates
        if root is None:
            raise
        root = os.path.abspath(root)
        named = os.fspath(exc.filename) if isinstance(exc.filename, (str, os.PathLike)) else None
        if named is None or os.path.commonpath([root, os.path.abspath(os.path.join(root, named))]) != root:
            raise
        print(
            f"cute-bind cache {args.action}: cannot use {root} as a cache folder ({named}: {exc.strerror or exc}); "
            f"fix: pass --dir a cache folder (or none: {ENV_DIR} or the default folder {default_dir()})",
            file=sys.stderr,
        )
        return 2


def _main(args: argparse.Namespace, root: str) -> int:
    if args.action in ("warm", "export", "import"):
        return _ship(args, root)
    if args.action == "clear":
        print(f"removed {clear(root)} entries from {root}")
        return 0
    if args.action == "prune":
        # --max-size "" is refused (CB609), not the default limit
        limit = parse_size(args.max_size, "--max-size") if args.max_size is not None else size_limit()
        before = {e.key: e.status for e in info(root)}
        removed = prune(
            root, max_size=limit, older_than_s=args.older_than * 86400 if args.older_than is not None else None, other=args.other
        )
        by_status = [before.get(key, "?") for key in removed]
        why = ", ".join(f"{by_status.count(st)} {st}" for st in dict.fromkeys(by_status))
        print(f"removed {len(removed)} entries from {root} (limit {_size(limit)})" + (f": {why}" if why else ""))
        kept = sum(st.startswith("other-") for key, st in before.items() if key not in removed)
        if kept:
            print(f"kept {kept} entries of other settings or versions (prune --other removes them)")
        return 0
    entries = info(root)
    now = time.time()
    if args.json:
        rows = [
            {"kernel": e.kernel, "function": e.function, "key": e.key, "size": e.size, "age_s": now - e.created,
             "last_used_s": now - e.last_used, "hits": e.hits, "status": e.status, "reason": e.reason}
            for e in entries
        ]  # fmt: skip
        print(json.dumps({"dir": root, "entries": rows}, indent=1))
        return 0
    total = sum(e.size for e in entries)
    print(f"cache folder: {root}")
    print(f"{len(entries)} entries, {_size(total)} of {_size(size_limit())}" + (f": {_counts(entries)}" if entries else ""))
    if entries:
        print(f"status as seen by this process ({_here()}); see docs/concepts/cache.md")
    if entries:
        print(f"{'kernel':24s} {'key':12s} {'size':>8s} {'age':>7s} {'used':>7s} {'hits':>5s}  status")
        for e in reversed(entries):
            print(
                f"{e.kernel[:24]:24s} {e.key[:12]:12s} {_size(e.size):>8s} {_age(now - e.created):>7s} {_age(now - e.last_used):>7s} {e.hits:>5d}  {_status(e)}"
            )
    return 0
