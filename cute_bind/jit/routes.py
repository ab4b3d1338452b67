"""A kernel call's shape, and the callers and C routes built over it.

:class:`CallShape` is read once from a kernel's signature: which parameters are positional, how
many are required, the defaults of the tail, where the Constexpr values and the runtime values
stand among the positions, and which runtime values are streams a call may leave out (declared
``= None``). Over it:

- :meth:`CallShape.positional` places a keyword call's values by name (the Python path's copy of
  ``positional_call`` in ``_cdispatch.c``, planned once per call shape);
- :meth:`CallShape.caller` is the function the fast path calls with a call's own arguments, for
  one specialization (the handle's launch, or a closure that fills defaults, checks Constexpr
  values and fills a left-out stream in);
- :meth:`CallShape.route` is the same as a record ``_cdispatch.c`` interprets (``try_route``):
  :class:`StreamRoute` for the ``f(..., stream=None)`` form and the bare launch,
  :class:`KeyedRoute` for the general one.

A caller that cannot take a call raises :class:`Miss`, which sends it to the dispatch path.
"""

from __future__ import annotations

import operator
import sys
from typing import Callable, Hashable, NamedTuple, NoReturn, Sequence

from ..slots import StreamKind
from .signature import Param
from .streams import _TORCH, current_stream

__all__ = ["CallShape", "KeyedRoute", "Miss", "Route", "StreamRoute", "unset"]


class Miss(Exception):
    """The thread's current caller cannot take this call (internal: never reaches a user)."""


def unset(*args: object, **kwargs: object) -> NoReturn:
    """The caller of a thread that has none: every call takes the dispatch path."""
    raise Miss


#: a specialization's Constexpr checks: (position, type, the compile key's value)
Checks = tuple[tuple[int, type, Hashable], ...]

#: how a keyword call's values are placed: ``(*args, *kwargs.values(), *tail)`` -> the positional values
Plan = Callable[[tuple[object, ...]], tuple[object, ...]]


class StreamRoute(NamedTuple):
    """A route whose call is the handle's launch as it is (``fill_n`` -1), or with a left-out
    last stream appended (``fill_n``: the positional count without it; ``stream_fn`` reads it)."""

    launch: Callable[..., object]
    fill_n: int
    stream_fn: Callable[[], int] | None


class KeyedRoute(NamedTuple):
    """A route that fills the tail's defaults, checks each Constexpr value (``checks``: position,
    type, the compile key's value), keeps the runtime positions (``runtime_index``) and fills the streams
    left out (``streams``: their places among the runtime values) before the launch."""

    launch: Callable[..., object]
    npos: int
    required: int
    tail: tuple[object, ...]
    checks: Checks
    runtime_index: tuple[int, ...]
    streams: tuple[int, ...]
    stream_fn: Callable[[], int] | None


Route = StreamRoute | KeyedRoute


class CallShape:
    """The positional shape of a kernel's calls (see the module docstring); ``params`` are the
    signature's parameters (``name``, ``slot``: None for a Constexpr one, ``keyword_only``,
    ``has_default``, ``default``)."""

    def __init__(self, params: Sequence[Param]) -> None:
        #: stream parameters declared with a None default: left out (or None) means the current stream
        self.stream_names = tuple(p.name for p in params if isinstance(p.slot, StreamKind) and p.has_default and p.default is None)
        positional = [p for p in params if not p.keyword_only]
        #: every parameter positional (else every call binds on the dispatch path)
        self.simple = len(positional) == len(params)
        self.npos = len(positional)
        required = 0
        for p in positional:
            if p.has_default:
                break
            required += 1
        self.required = required
        #: the defaults of the tail after the required parameters (None: a gap without a default)
        self.tail = tuple(p.default for p in positional[required:]) if all(p.has_default for p in positional[required:]) else None
        #: a keyword call's names mapped to positions (every parameter positional)
        self.positions = {p.name: i for i, p in enumerate(positional)} if self.simple else None
        self.tail_values = self.tail or ()
        self._plans: dict[tuple[int | str, ...], Plan | None] | None = {} if self.simple else None
        #: the Constexpr parameters: (position, name)
        self.constexpr = tuple((i, p.name) for i, p in enumerate(positional) if p.slot is None)
        #: the runtime parameters' positions, and the streams' places among the runtime values
        self.runtime_index = tuple(i for i, p in enumerate(positional) if p.slot is not None)
        self.stream_index = tuple(self.runtime_index.index(i) for i, p in enumerate(positional) if p.name in self.stream_names)
        #: what ``_cdispatch.c``'s ``positional_call`` is given (``CallSite._set_params``); names are
        #: interned: a call's keywords are, and C finds them by identity
        self.params = (tuple(sys.intern(p.name) for p in positional), required, self.tail_values) if self.simple else None

    # ------------------------------------------------------------------ keyword placement
    def positional(self, args: tuple[object, ...], kwargs: dict[str, object]) -> tuple[object, ...] | None:
        """A keyword call as the positional call it stands for (defaults filled in before the last value
        given), or None where the dispatch path must bind it: a name of no positional parameter, one given
        twice, a required parameter left out, keyword-only parameters. Planned once per call shape."""
        plans = self._plans
        if plans is None:
            return None
        shape: tuple[int | str, ...] = (len(args), *kwargs)
        if shape not in plans:
            if len(plans) >= 256:  # ever new call shapes: keep the table bounded
                plans.clear()
            plans[shape] = self._plan(len(args), tuple(kwargs))
        plan = plans[shape]
        if plan is None:
            return None
        return plan((*args, *kwargs.values(), *self.tail_values))

    def _plan(self, n: int, names: tuple[str, ...]) -> Plan | None:
        """How :meth:`positional` places a call of ``n`` positionals and these keywords: an item getter
        over ``(*args, *kwargs.values(), *tail)``, or None (the dispatch path binds it)."""
        index = self.positions
        if index is None or n > self.npos:
            return None
        source: list[int | None] = [*range(n), *(None,) * (self.npos - n)]
        top = n
        for k, name in enumerate(names):
            i = index.get(name)
            if i is None or source[i] is not None:
                return None
            source[i] = n + k
            top = max(top, i + 1)
        for i in range(top):
            if source[i] is None:
                if i < self.required:
                    return None
                source[i] = n + len(names) + i - self.required  # the default of the tail
        order = [int(i) for i in source[:top] if i is not None]  # every position is filled by now
        if len(order) == 1:
            only = order[0]
            return lambda values: (values[only],)
        return operator.itemgetter(*order)

    # ------------------------------------------------------------------ callers and routes
    def _stream_last(self) -> bool:
        """The common form ``f(..., stream=None)``: no Constexpr, one stream, last and the only default."""
        streams = self.stream_index
        return not self.constexpr and len(streams) == 1 and streams[0] == self.npos - 1 and self.required == self.npos - 1

    def route(self, attempt: Callable[..., object], device: int | None, checks: Checks) -> Route | None:
        """A specialization's route for the C path (``try_route`` in ``_cdispatch.c``): ``attempt`` is its
        handle's ``try_launch``, ``device`` its tensors' device (-1: several); None where a call needs the
        dispatch path (keyword-only parameters, tensors on several devices with a stream to fill in)."""
        streams = self.stream_index
        if not self.simple or (device == -1 and streams):
            return None
        if not self.constexpr and not streams:
            return StreamRoute(attempt, -1, None)
        get_stream = _TORCH.getter(device) if streams else None
        if self._stream_last():
            return StreamRoute(attempt, self.npos - 1, get_stream)
        tail, required = (self.tail, self.required) if self.tail is not None else ((), self.npos)
        return KeyedRoute(attempt, self.npos, required, tail, checks, self.runtime_index, streams, get_stream)

    def caller(
        self, name: str, device: int | None, checks: Checks, launch: Callable[..., object]
    ) -> tuple[Callable[..., object], tuple[int, Callable[[], int]] | None]:
        """The function the fast path calls with the call's own arguments, for one specialization
        (``launch``: its handle's launch; ``name``: the kernel's), and for the common
        ``f(..., stream=None)`` form the ``(positional count, stream getter)`` with which the C
        path appends a left-out stream itself."""
        if not self.simple:
            return unset, None  # keyword-only parameters: every call binds on the dispatch path
        if not self.constexpr and not self.stream_names:
            return launch, None  # the handle's launch takes the call's arguments as they are
        streams = self.stream_index
        nstreams = len(streams)
        if device == -1 and streams:
            return unset, None  # tensors on several devices: the dispatch path fills the stream in or raises CB220
        if self._stream_last():
            # the common form ``f(..., stream=None)``, stream last: fill it in when left out
            last = self.npos - 1
            get_stream = _TORCH.getter(device)

            def call_stream_last(*args: object, **kwargs: object) -> object:
                if kwargs or len(args) != last:
                    return launch(*args, **kwargs)  # the stream given (None: refused, then the dispatch path)
                try:
                    stream = get_stream()
                except Exception:
                    raise Miss from None  # the dispatch path reports it (CB221)
                return launch(*args, stream)

            return call_stream_last, (last, get_stream)
        # general form: fill defaults of the tail, check Constexpr values, drop them, fill streams
        npos, required, tail = self.npos, self.required, self.tail
        if tail is None:
            tail = ()
            required = npos
        index = self.runtime_index
        getter: Plan
        if len(index) == 1:
            only = index[0]

            def getter(a: tuple[object, ...]) -> tuple[object, ...]:
                return (a[only],)

        elif index:
            getter = operator.itemgetter(*index)
        else:

            def getter(a: tuple[object, ...]) -> tuple[object, ...]:
                return ()

        stream_names = self.stream_names

        def call(*args: object, **kwargs: object) -> object:
            n = len(args)
            if kwargs or n < required or n > npos:
                raise Miss
            if n < npos:
                args = args + tail[n - required :]
            for i, cls, v in checks:
                a = args[i]
                # ``v != a``, not ``a != v``: ``v`` is the compile key's part, bare (an int, a str: one C compare,
                # as ever) or a cache.key.Exact (floats by bits, nested types), whose own __ne__ must decide
                if a.__class__ is not cls or v != a:
                    raise Miss
            runtime = getter(args)
            if nstreams:
                runtime = list(runtime)
                for j, sname in zip(streams, stream_names):
                    if runtime[j] is None:
                        runtime[j] = current_stream(device, name, sname)
            return launch(*runtime)

        return call, None
