"""CB6xx, compiling and caching: the catalog entries of this range, in code order.

Raised when calling a kernel specializes it (its specializations and their
limit), and by the disk compile cache (``cute_bind/cache/``).
"""

from .. import errors as _E
from ..define import entry as _entry
from .examples import FILL as _FILL
from .examples import PRELUDE as _PRELUDE

_LIMITED = (
    _PRELUDE
    + """
@cute_bind.kernel(max_specializations=1)
@cute.jit
def fill(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32, offset: cutlass.Constexpr[int]):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = value + offset

buf = (ctypes.c_int32 * 1)()
addr = ctypes.addressof(buf)
fill(addr, 1, 0)      # the first specialization (offset=0)
"""
)


SPECIALIZATION_LIMIT = _entry(
    "CB601",
    "specialization-limit",
    _E.SpecializationError,
    summary="A call needs a new specialization, and the kernel already has as many as its limit allows.",
    message="kernel '{kernel}': a call needs specialization #{got}, past the limit of {expected} "
    "(max_specializations); it differs from the last one in {detail}",
    explanation="""
    `kernel(...)` compiles one specialization per compile key: pointer
    dtypes, alignments and address spaces, tensor dtypes, ranks, layouts and
    devices, Constexpr values, the target architecture. A kernel called with
    ever new keys (a Constexpr taking each loop index, tensors of ever new
    static shapes) would compile without end, each compile taking a second
    or more. The limit (`max_specializations`, 8 by default, as
    torch.compile's) stops that at the call that would go past it, and the
    message names what changed.
    """,
    example=_LIMITED
    + """
fill(addr, 1, 1)      # offset=1 is a second specialization, the limit is 1 -> CB601
""",
    fix="""
    Make the changing value a runtime parameter instead of a Constexpr (or a
    static tensor layout dynamic), raise the limit
    (`@cute_bind.kernel(max_specializations=...)`), or let calls past it go on
    with a warning (`on_limit="warn"`, CB602).
    """,
)


SPECIALIZATION_LIMIT_WARNING = _entry(
    "CB602",
    "specialization-limit-warning",
    _E.SpecializationWarning,
    summary='A kernel with on_limit="warn" compiled a specialization past its limit (a warning).',
    message="kernel '{kernel}': specialization #{got} is past the limit of {expected} (max_specializations); "
    'compiling it anyway (on_limit="warn"); it differs from the last one in {detail}',
    explanation="""
    The same condition as CB601, for a kernel decorated with
    `on_limit="warn"`: the call compiles the new specialization and a
    `cute_bind.SpecializationWarning` is issued through `warnings.warn` for
    each specialization past the limit (a warning filter set to `"error"`
    raises it instead).
    """,
    example=(
        _LIMITED.replace("max_specializations=1)", 'max_specializations=1, on_limit="warn")')
        + """
import warnings
warnings.simplefilter("error")   # turn the warning into an exception, to show it
fill(addr, 1, 1)                 # a second specialization past the limit of 1 -> CB602
"""
    ),
    fix="""
    As for CB601: make the changing value a runtime parameter or raise the
    limit; `on_limit="raise"` (the default) turns the warning into CB601.
    """,
)


# CB605-CB609: the disk compile cache (cute_bind/cache/). The warnings are
# CacheWarning (a RuntimeWarning); each example turns them into errors with a
# warnings filter so that it fails with its code.
_CACHE_PRELUDE = (
    _FILL
    + """
import os
import tempfile
import warnings

os.environ["CUTE_BIND_CACHE_DIR"] = tempfile.mkdtemp()   # a private cache folder for the example
fill.bind(addr, 1)                                        # compiles and stores the entry
(entry,) = cute_bind.cache.info()
fill.clear_cache()                                        # forget the in-process compile: the next bind reads the disk
warnings.simplefilter("error", cute_bind.CacheWarning)    # make the warning raise, for the example
"""
)


CACHE_ENTRY_CORRUPT = _entry(
    "CB605",
    "cache-entry-corrupt",
    _E.CacheWarning,
    summary="A disk cache entry failed its checksum; the kernel was recompiled and the entry replaced.",
    message="kernel '{kernel}': the disk cache entry {detail} is corrupt ({got}); it was compiled again and the entry replaced",
    explanation="""
    Every cache entry ends with a SHA-256 of everything before it, checked on
    each read. A file cut short (a full disk, a copy interrupted) or changed
    by anything but cute_bind fails that check and is never loaded: the
    kernel compiles as if the entry were absent and the fresh compile
    replaces it. This warning is issued once per entry and process.
    """,
    example=_CACHE_PRELUDE
    + """
with open(entry.path, "r+b") as f:
    f.truncate(entry.size // 2)          # a truncated entry
fill.bind(addr, 1)                       # -> CB605 (then recompiled and replaced)
""",
    fix="""
    Nothing is required: the entry was replaced. If it happens often, check
    the cache folder's disk (`python -m cute_bind cache prune` removes
    corrupt entries).
    """,
)


CACHE_ENTRY_MISMATCH = _entry(
    "CB606",
    "cache-entry-mismatch",
    _E.CacheWarning,
    summary="A disk cache entry was written for another key, version or environment, or cannot be loaded; it was recompiled.",
    message="kernel '{kernel}': the disk cache entry {detail} does not belong to this compile ({got}); it was compiled again "
    "and the entry replaced",
    explanation="""
    An entry's file name is the hash of everything its compile depends on,
    and its header repeats the key and the environment it was made in
    (cute_bind's cache format, DSL version and CUDA variant, Python, machine,
    `CUTE_DSL_*` settings). A header that disagrees (an entry copied between
    folders, written by another version under a colliding name), or an
    object file the DSL refuses to load, is never used: the kernel compiles
    again and the entry is replaced. Issued once per entry and process.
    """,
    example=_CACHE_PRELUDE
    + """
from cute_bind.cache.store import decode, encode

read = decode(entry.path.read_bytes(), entry.key, {})
read.header["env"]["dsl"] = "4.7.0"      # an entry written by another DSL version
entry.path.write_bytes(encode(read.header, read.payload))
fill.bind(addr, 1)                       # -> CB606 (then recompiled and replaced)
""",
    fix="""
    Nothing is required. Folders shared between installations are fine
    (each keeps its own entries); do not copy entries between keys.
    """,
)


CACHE_UNAVAILABLE = _entry(
    "CB607",
    "cache-unavailable",
    _E.CacheWarning,
    summary="The disk cache folder cannot be read or written; kernels compile without it.",
    message="kernel '{kernel}': the disk compile cache is unavailable: expected {expected}, got {got}; compiling without it",
    explanation="""
    The cache folder (`CUTE_BIND_CACHE_DIR`, default under the user's cache
    folder) could not be created, read or written: a read-only home, a
    path through a file, missing permissions, a full disk. The cache is
    only an optimisation, so the kernel compiles in-process as it would
    without it. Issued once per folder and process.
    """,
    example=_FILL
    + """
import os
import tempfile
import warnings

blocker = tempfile.NamedTemporaryFile(delete=False).name
os.environ["CUTE_BIND_CACHE_DIR"] = os.path.join(blocker, "cache")   # a folder under a file cannot exist
warnings.simplefilter("error", cute_bind.CacheWarning)    # make the warning raise, for the example
fill.bind(addr, 1)                                        # -> CB607 (compiles without the cache)
""",
    fix="""
    Point `CUTE_BIND_CACHE_DIR` at a writable folder, or turn the cache off
    with `CUTE_BIND_CACHE=0` to silence this.
    """,
)


CACHE_SKIPPED = _entry(
    "CB608",
    "cache-skipped",
    _E.CacheWarning,
    summary="A compile cannot be stored in the disk cache (no stable key, or the DSL cannot export it); it stays in-process.",
    message="kernel '{kernel}': this compile is not stored in the disk cache: expected {expected}, got {got}",
    explanation="""
    An entry may only be reused when everything its compile read is in its
    key. The key spells the values of the names the kernel and its helpers
    read (numbers, strings, tuples, enums, dataclasses, arrays, functions by
    their source, a callable kernel object's attributes, an object of your
    own Python classes by its class and attributes); any other object (an
    extension type's, a builtin's subclass, the DSL's own) could change
    without the key changing, so such a compile is never
    stored rather than risk loading a stale kernel. The key reads values
    without calling their own code (no `repr`, `==` or attribute hooks: a
    `cute.Layout` kept from a finished trace crashes the process on
    `repr`), so an object it does not know is refused, not guessed at; so
    is a value whose spelling fails in any other way. The same happens when
    the DSL cannot export the compiled function (e.g. TVM-FFI compile
    options). The kernel works as without the cache. Issued once per kernel
    and cause.
    """,
    example=_PRELUDE
    + """
import os
import tempfile
import types
import warnings

SETTINGS = types.SimpleNamespace(offset=3)   # an extension type's object: not spelled

@cute_bind.kernel
def fill(out: cute_bind.Pointer[cutlass.Int32], value: cutlass.Int32):
    t = cute.make_tensor(out, cute.make_layout(1))
    t[0] = value + SETTINGS.offset      # read while tracing, invisible to a source hash

os.environ["CUTE_BIND_CACHE_DIR"] = tempfile.mkdtemp()
warnings.simplefilter("error", cute_bind.CacheWarning)    # make the warning raise, for the example
buf = (ctypes.c_int32 * 1)()
fill.bind(ctypes.addressof(buf), 1)    # -> CB608 (compiled, not stored)
""",
    fix="""
    For a value without a stable spelling: read it from a constant, a
    dataclass or an argument the key can spell (a `cutlass.Constexpr`
    parameter), or vouch for the kernel with
    `@cute_bind.kernel(cache_key="v2")` and change that key whenever what it
    depends on changes. For a function the DSL cannot export there is
    nothing to fix: it compiles in each process. `cache=False` silences it
    for the kernel.
    """,
)


CACHE_SETTING_INVALID = _entry(
    "CB609",
    "cache-setting-invalid",
    _E.CacheSettingError,
    summary="A disk cache setting is invalid.",
    message="the disk cache setting {parameter} is invalid (kernel '{kernel}'): expected {expected}, got {got}",
    explanation="""
    `CUTE_BIND_CACHE` is `1` or `0`; `CUTE_BIND_CACHE_SIZE` (and
    `cache prune --max-size`) is a finite size in bytes with an optional
    `K`/`M`/`G` suffix; `CUTE_BIND_CACHE_DIR` is an absolute path (a
    relative one would move the cache with the working directory);
    `CUTE_BIND_CACHE_SHARED` is the absolute path of a team cache's key
    file; `cache info|clear|prune --dir` (and the `root` of
    `cute_bind.cache.info`/`clear`/`prune`) is a folder, never empty (an
    empty one is not the default folder: a script's unset variable must not
    clear the user's cache); `cute_bind.cache.warm(..., workers=N)` needs a
    kernel that worker processes can import by module and name. Any other
    value is refused rather than guessed.
    """,
    example=_FILL
    + """
import os

os.environ["CUTE_BIND_CACHE_SIZE"] = "lots"
fill.bind(addr, 1)                 # -> CB609
""",
    fix="Give the setting the message names a value of the form it expects: `CUTE_BIND_CACHE=0|1`, "
    "`CUTE_BIND_CACHE_SIZE` a size such as `512M` or `2G`, `CUTE_BIND_CACHE_DIR` and `CUTE_BIND_CACHE_SHARED` "
    "absolute paths, `--dir` a folder's path (or leave it out for the default), "
    "`warm(workers=N)` a kernel importable by module and name.",
)


# CB610-CB613: the cache's trust model (docs/concepts/safety.md, "Threat model").
CACHE_FOLDER_UNTRUSTED = _entry(
    "CB610",
    "cache-folder-untrusted",
    _E.CacheWarning,
    summary="The disk cache folder is not owned by this user or is writable by others; kernels compile without it.",
    message="kernel '{kernel}': the disk cache folder {detail} is not trusted: it is {got}; compiling without the cache "
    "(nothing is loaded from it or written to it). To use it: {expected}",
    explanation="""
    An entry of the disk cache is native code that `bind()` loads and runs,
    so whoever can write the cache folder can choose what your process runs.
    By default each level of the folder (the folder itself, `v1/`,
    `v1/entries/`, `v1/locks/`) must belong to the user the process runs as
    and be writable by nobody else, as ssh's StrictModes and Git's
    `safe.directory` require. A folder of another user, or one that its
    group or every user can write (`/tmp`, a 0777 folder), is refused: the
    kernel compiles in-process as without the cache. A team shares a folder
    only as a shared cache (`CUTE_BIND_CACHE_SHARED`), where a group-writable
    folder is allowed and every entry must carry a signature made with the
    team's key; a folder writable by every user is refused in both modes.
    Issued once per folder and process.
    """,
    example=_FILL
    + """
import os
import tempfile
import warnings

folder = tempfile.mkdtemp()
os.chmod(folder, 0o777)                                   # a folder every user can write
os.environ["CUTE_BIND_CACHE_DIR"] = folder
warnings.simplefilter("error", cute_bind.CacheWarning)    # make the warning raise, for the example
fill.bind(addr, 1)                                        # -> CB610 (compiles without the cache)
""",
    fix="""
    Use a folder of your own that only you can write (`chmod 700` it, or
    point `CUTE_BIND_CACHE_DIR` elsewhere); to share one folder with a team,
    set it up as a shared cache (group-owned, `chmod 2770`, a key file in
    `CUTE_BIND_CACHE_SHARED`, see docs/concepts/cache.md).
    """,
)


CACHE_ENTRY_UNTRUSTED = _entry(
    "CB611",
    "cache-entry-untrusted",
    _E.CacheWarning,
    summary="A disk cache entry, hit counter or lock is not a regular file of this user's (or is too large); it is never read.",
    message="kernel '{kernel}': the disk cache file {detail} is not trusted: it is {got}; it was not read, and the kernel was compiled again",
    explanation="""
    Every cache file is opened without following a symbolic link and
    without waiting on a FIFO, and checked before one byte is read: it must
    be a regular file, belong to this user and be writable by nobody else
    (in a shared cache: not writable by every user) and be at most 1 GiB. A
    link (to `/dev/zero`, to a file elsewhere), a FIFO, a folder or device,
    a file of another user or one the group can write, planted under an
    entry's, hit counter's or lock's name, is refused: nothing is read from
    it or written through it, and the kernel compiles (a fresh entry then
    replaces the name, except a folder: cute_bind never removes a tree it
    did not make, so that kernel's compiles are not stored until the
    folder is gone). Issued once per file and process.
    """,
    example=_CACHE_PRELUDE
    + """
os.chmod(entry.path, 0o666)              # an entry every user could have written
fill.bind(addr, 1)                       # -> CB611 (then recompiled and replaced)
""",
    fix="""
    Nothing is required for a file: the name is replaced by a fresh entry
    (or, for a lock, the compile goes on without it). A folder stays:
    remove it by hand. Find out who planted it: in a private cache only you
    and root can. `python -m cute_bind cache prune` removes unsafe files
    (and lists a folder it leaves).
    """,
)


CACHE_ENTRY_UNSIGNED = _entry(
    "CB612",
    "cache-entry-unsigned",
    _E.CacheWarning,
    summary="A shared cache's entry does not carry a valid signature of the team key; it is never loaded.",
    message="kernel '{kernel}': the shared disk cache entry {detail} is not signed with the team key: {got}; it was not loaded, "
    "and the kernel was compiled again",
    explanation="""
    In a shared cache (`CUTE_BIND_CACHE_SHARED` names a key file) a folder
    may be written by the whole group, so owner and mode say nothing about
    who made an entry. Every entry then ends with an HMAC-SHA256 of its
    bytes under the team's key, which lives outside the cache folder, and an
    entry whose HMAC does not check (written by a process without the key,
    signed with another key, forged, or damaged) is never loaded, not even
    its header: the kernel compiles and a signed entry replaces it. Issued
    once per entry and process.
    """,
    example=_CACHE_PRELUDE
    + """
key_folder = tempfile.mkdtemp()                           # outside the cache folder
key_file = os.path.join(key_folder, "team.key")
with open(key_file, "w") as f:
    f.write("0123456789abcdef0123456789abcdef")
os.chmod(key_file, 0o600)                                 # the key is a secret: yours alone (or your group's)
os.environ["CUTE_BIND_CACHE_SHARED"] = key_file           # a shared cache from now on
fill.bind(addr, 1)                       # the entry stored above is not signed -> CB612
""",
    fix="""
    Nothing is required: the entry was replaced by a signed one. If it
    recurs, check that every process sharing the folder sets
    `CUTE_BIND_CACHE_SHARED` to the same key file, and who else can write
    the folder.
    """,
)


CACHE_KEY_UNTRUSTED = _entry(
    "CB613",
    "cache-key-untrusted",
    _E.CacheWarning,
    summary="The key file of a shared disk cache is missing or may not be used; kernels compile without the cache.",
    message="kernel '{kernel}': the shared cache key file {detail} cannot be used: {got}; compiling without the cache. "
    "To use it: {expected}",
    explanation="""
    The key in `CUTE_BIND_CACHE_SHARED` is what makes an entry of a shared
    cache trustworthy, so it must be out of reach of whoever can write the
    cache: a regular file outside the cache folder, owned by this user or
    root, writable by nobody else and not readable by every user, holding
    16 to 4096 bytes of key. A key file that is missing, inside the cache
    folder, a link to a FIFO, someone else's or writable by others is
    refused and the kernel compiles without the cache (nothing is loaded
    or written). Issued once per key file and process.
    """,
    example=_FILL
    + """
import os
import tempfile
import warnings

folder = tempfile.mkdtemp()
os.environ["CUTE_BIND_CACHE_DIR"] = folder
key_file = os.path.join(folder, "team.key")               # inside the cache folder
with open(key_file, "w") as f:
    f.write("0123456789abcdef0123456789abcdef")
os.chmod(key_file, 0o600)
os.environ["CUTE_BIND_CACHE_SHARED"] = key_file
warnings.simplefilter("error", cute_bind.CacheWarning)    # make the warning raise, for the example
fill.bind(addr, 1)                                        # -> CB613 (compiles without the cache)
""",
    fix="""
    Keep the key in a file outside the cache folder, owned by you or root,
    mode 0640 (group-readable for the team) or 0600, and point
    `CUTE_BIND_CACHE_SHARED` at it; or unset `CUTE_BIND_CACHE_SHARED` for a
    private cache.
    """,
)


# CB614-CB616: bundles of cache entries shipped to another machine (cute_bind/cache/bundle.py).
_BUNDLE_PRELUDE = (
    _FILL
    + """
import os
import tempfile

os.environ["CUTE_BIND_CACHE_DIR"] = tempfile.mkdtemp()   # a private cache folder for the example
fill.bind(addr, 1)                                        # compiles and stores the entry
key_file = os.path.join(tempfile.mkdtemp(), "ship.key")  # the signing key, outside the cache folder
with open(os.open(key_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
    f.write("0123456789abcdef0123456789abcdef")
bundle = os.path.join(tempfile.mkdtemp(), "warm.bundle")
"""
)


BUNDLE_UNSIGNED = _entry(
    "CB614",
    "bundle-unsigned",
    _E.CacheSettingError,
    summary="A cache bundle carries no signature, or its signature does not verify under the key given; nothing of it is imported.",
    message="the cache bundle {detail} is refused: expected {expected}, got {got}",
    explanation="""
    A bundle (`cute-bind cache export`) ships compiled kernels, native code
    the importing processes will load and run, so it is imported only when
    it is signed and its signature verifies under the key the importer gives:
    an HMAC-SHA256 key file both sides hold, or an Ed25519 key pair (the
    exporter's private key, the importer's public key). The signature is
    checked before anything else of the file is read. A file without one
    (written by hand, truncated), signed with another key or modified after
    signing is refused whole; so is an export without exactly one signing key.
    """,
    example=_BUNDLE_PRELUDE
    + """
with open(bundle, "wb") as f:
    f.write(b"CUTE_BIND BUNDLE 1\\n")                    # a bundle without a signature
cute_bind.cache.import_bundle(bundle, key_file=key_file)  # -> CB614
""",
    fix="""
    Import the bundle with the key it was signed with
    (`cute-bind cache import FILE --key-file KEY`, or `--ed25519-key PUBLIC.pem`
    for a bundle signed with the private key), or export it again
    (`cute-bind cache export FILE --key-file KEY`) from a cache you trust.
    """,
)


BUNDLE_FOREIGN = _entry(
    "CB615",
    "bundle-foreign",
    _E.CacheSettingError,
    summary="A cache bundle was made for another GPU architecture, DSL, cute_bind, Python, machine or CUTE_DSL_* settings; it is not imported.",
    message="the cache bundle {detail} is refused: it was made for another environment: {got}; expected {expected}",
    explanation="""
    An entry loads only in the environment it was compiled in: the same
    nvidia-cutlass-dsl (and CUDA variant), cute_bind sources, Python,
    machine and CPU model, `CUTE_DSL_*` settings and target architecture.
    A bundle's manifest names the exporter's; a verified bundle whose
    manifest differs from the importing process is refused with the
    differences named, rather than filling the cache with entries that
    would never load (or, for another GPU, load code built for it).
    """,
    example=_BUNDLE_PRELUDE
    + """
cute_bind.cache.export_bundle(bundle, key_file=key_file)  # signed, for this environment
os.environ["CUTE_DSL_ARCH"] = "sm_100a"                   # another target architecture
cute_bind.cache.import_bundle(bundle, key_file=key_file)  # -> CB615
""",
    fix="""
    Export the bundle on a build machine with the importer's GPU
    architecture (`CUTE_DSL_ARCH`), DSL, cute_bind and Python versions, or
    warm the cache on the target machine itself (`cute-bind cache warm`).
    """,
)


BUNDLE_SIGNER_MISSING = _entry(
    "CB616",
    "bundle-signer-missing",
    _E.OptionalDependencyError,
    summary="An Ed25519-signed cache bundle needs the optional 'cryptography' package, which cannot be imported.",
    message="cache bundles signed with Ed25519 need {expected}; got {got}",
    explanation="""
    HMAC-SHA256 bundles need only the standard library. Ed25519 signatures
    (a private key to export, a public key to import, so the importer never
    holds a key that could sign) are made and checked with the
    `cryptography` package, an optional dependency of cute_bind.
    """,
    example=_BUNDLE_PRELUDE
    + """
import sys
sys.modules["cryptography"] = None                        # as on a machine without it
cute_bind.cache.export_bundle(bundle, ed25519_key=key_file)  # -> CB616
""",
    fix="""
    `pip install cryptography` (or sign with an HMAC key file: `--key-file`).
    """,
)
