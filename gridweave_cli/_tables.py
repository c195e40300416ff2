"""Tables that fit the terminal: ids never cut, long text shortened, columns left out last.

Rich shrinks a table wider than the terminal by wrapping its cells (a job id broken over
two lines) and then by cutting every column alike (``job-377694c688…``). Instead each
column says how it may give way, and :func:`fitted_table` applies, in turn, until the table
fits: shorter headers; free text (a function's name, what holds a GPU) cut with an
ellipsis down to its ``min_width``; then whole columns, lowest ``drop`` first. A column
with neither (an id, a phase, an amount) is shown whole, always, on one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

__all__ = ["Column", "fitted_table"]

#: The spaces between two columns (rich's padding of one on each side, no edge padding).
_GAP = 2


@dataclass(frozen=True, slots=True)
class Column:
    """One column and how it gives way when the terminal is narrow."""

    header: str
    #: A shorter header, used first when the table is too wide.
    short: str | None = None
    #: Free text that may be cut (with an ellipsis) down to this width; None: never cut.
    min_width: int | None = None
    #: Left out when the table is still too wide, lowest first; None: always shown.
    drop: int | None = None
    justify: Literal["left", "right", "center"] = "left"


def _width(console: Console, cell: RenderableType) -> int:
    if isinstance(cell, str):
        return Text.from_markup(cell).cell_len
    return Measurement.get(console, console.options, cell).maximum


def fitted_table(
    console: Console, columns: Sequence[Column], rows: Sequence[Sequence[RenderableType]]
) -> Table:
    """A table of ``rows`` (one cell per column) no wider than ``console``'s width, where
    that can be had by the columns' own rules (see the module's docstring)."""
    cells = [[_width(console, row[i]) for row in rows] for i in range(len(columns))]
    # a column with nothing to show (no header, no cell) takes no room
    shown = [i for i, column in enumerate(columns) if column.header or any(cells[i])]
    short = False

    def title(i: int) -> str:
        return (short and columns[i].short) or columns[i].header

    def natural() -> dict[int, int]:
        return {i: max([_width(console, title(i)), *cells[i]]) for i in shown}

    def needed(widths: dict[int, int]) -> int:
        return sum(widths[i] for i in shown) + _GAP * (len(shown) - 1)

    widths = natural()
    while needed(widths) > console.width:
        if not short and any(columns[i].short for i in shown):
            short = True
            widths = natural()
            continue
        widths = _cut_free_text(columns, shown, widths, needed(widths) - console.width)
        if needed(widths) <= console.width:
            break
        droppable = [i for i in shown if columns[i].drop is not None]
        if not droppable:
            break  # as narrow as it goes: rich wraps what is left
        shown.remove(min(droppable, key=lambda i: (columns[i].drop or 0, i)))
        widths = natural()
    whole = natural()
    table = Table(box=None, pad_edge=False)
    for i in shown:
        free_text = columns[i].min_width is not None
        table.add_column(
            title(i),
            justify=columns[i].justify,
            no_wrap=True,
            overflow="ellipsis" if free_text else "fold",
            max_width=widths[i] if free_text and widths[i] < whole[i] else None,
        )
    for row in rows:
        table.add_row(*(row[i] for i in shown))
    return table


def _cut_free_text(
    columns: Sequence[Column], shown: list[int], widths: dict[int, int], excess: int
) -> dict[int, int]:
    """The widths with the free-text columns cut, widest first, by ``excess`` in all (each
    down to its ``min_width`` at most)."""
    widths = dict(widths)
    cuttable = [i for i in shown if columns[i].min_width is not None]
    while excess > 0:
        room = [i for i in cuttable if widths[i] > (columns[i].min_width or 0)]
        if not room:
            break
        widest = max(room, key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1
    return widths
