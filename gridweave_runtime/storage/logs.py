"""A job's output object while it grows: appended in parts, read by range.

While an attempt runs, its worker uploads only what its output gained since the last upload,
as one *part* per upload under ``<log key>.parts/``; when it ends, the whole output is written
once under the log key itself and the parts are deleted. A part's name is
``<end offset>.<start offset>`` (20 digits each), so the store lists the parts in order of
their end, and the parts holding the bytes from offset ``x`` on are those listed after
``<x>.~`` (S3's ``StartAfter``): a reader never lists, nor reads, what it already has.

Readers (:func:`read_log`) read the whole object when it is there, else the parts: both give
the same bytes. A reader that lost the race with the final write (a part deleted while it
read) reads again from the whole object.
"""

from __future__ import annotations

from dataclasses import dataclass

from gridweave_runtime.storage.store import ObjectNotFound, ObjectStore

__all__ = ["LogSlice", "log_part_key", "log_parts_uri", "read_log"]

_DIGITS = 20


@dataclass(frozen=True, slots=True)
class LogSlice:
    """Bytes of a log from ``start``, and the log's whole size when they were read."""

    data: bytes
    start: int
    size: int

    @property
    def end(self) -> int:
        """The offset after the bytes read."""
        return self.start + len(self.data)


def log_part_key(key: str, start: int, end: int) -> str:
    """The key of the part holding bytes ``[start, end)`` of the log ``key``."""
    return f"{key}.parts/{end:0{_DIGITS}d}.{start:0{_DIGITS}d}"


def log_parts_uri(uri: str) -> str:
    """The folder of the parts of the log at ``uri``."""
    return f"{uri}.parts"


def _parse_part(name: str) -> tuple[int, int] | None:
    """``(start, end)`` of a part's name; None for anything else in the folder."""
    end, _, start = name.partition(".")
    if len(end) != _DIGITS or len(start) != _DIGITS or not (end + start).isdigit():
        return None
    return int(start), int(end)


def _clip(start: int, end: int | None, size: int, last: int | None) -> tuple[int, int]:
    """The range to read of a log of ``size`` bytes."""
    begin = min(start, size)
    stop = size if end is None else max(begin, min(end, size))
    if last is not None and stop - begin > last:
        begin = stop - last
    return begin, stop


def read_log(
    store: ObjectStore, uri: str, start: int = 0, end: int | None = None, *, last: int | None = None
) -> LogSlice:
    """Bytes ``[start, end)`` of the log at ``uri`` (clipped to its size), the last ``last``
    of them with ``last``; an empty slice at 0 when nothing was written yet.

    A log whose whole object is missing is read from its parts; a size learnt from the
    parts counts only the parts ending after ``start`` (a ``start`` past every part answers
    ``size == start``: nothing new).
    """
    for _ in range(2):
        try:
            size = store.size(uri)
        except ObjectNotFound:
            pass
        else:
            begin, stop = _clip(start, end, size, last)
            return LogSlice(store.get_range(uri, begin, stop) if stop > begin else b"", begin, size)
        try:
            return _read_parts(store, uri, start, end, last)
        except ObjectNotFound:
            continue  # a part went while being read: the whole object is there now
    raise ObjectNotFound(f"the parts of {uri} kept changing while read")


def _read_parts(
    store: ObjectStore, uri: str, start: int, end: int | None, last: int | None
) -> LogSlice:
    folder = log_parts_uri(uri)
    parts = [
        (part_start, part_end, name)
        for name in store.list_names(folder, after=f"{start:0{_DIGITS}d}.~")
        if (found := _parse_part(name)) is not None
        for part_start, part_end in [found]
    ]
    if not parts:
        if start > 0 or store.list_names(folder):
            return LogSlice(b"", start, start)
        # nothing yet, or the parts were just replaced by the whole object: look again
        try:
            size = store.size(uri)
        except ObjectNotFound:
            return LogSlice(b"", 0, 0)
        raise ObjectNotFound(f"{uri} appeared ({size} bytes) while its parts were listed")
    size = parts[-1][1]
    begin, stop = _clip(start, end, size, last)
    pieces: list[bytes] = []
    covered = begin
    for part_start, part_end, name in parts:
        if covered >= stop:
            break
        if part_end <= covered:
            continue  # a part written again after an upload that seemed to fail
        if part_start > covered:
            break  # a gap: never written (an upload that failed and was not retried)
        piece = store.get_range(
            f"{folder}/{name}", covered - part_start, min(stop, part_end) - part_start
        )
        pieces.append(piece)
        covered += len(piece)
    return LogSlice(b"".join(pieces), begin, size)
