"""Stubs of cute_bind.jax._cxla, the XLA FFI handler (cute_bind/jax/_cxla.c)."""

ATTRIBUTE: str
API_MAJOR: int
API_MINOR: int
NONCE: int

def register(
    entry: int,
    storage: bytes,
    part_offsets: tuple[int, ...],
    has_result: bool,
    extra: tuple[int, ...],
    nargs: int,
    nrets: int,
    patches: tuple[tuple[int, int, int, int], ...],
    stream_offset: int,
    cuda: bool,
    name: str,
    device: int = 0,
    /,
) -> int: ...
def launches(frame_id: int, /) -> int: ...
def handlers(graph: bool, /) -> dict[str, object]: ...  # the stage handlers as PyCapsules
