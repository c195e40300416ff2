"""The admin console's charts (``GET /v1/admin/console/charts``): named time series read from
the Prometheus that scrapes every service, as the platform answers them.

A chart is one of a fixed set of PromQL queries the platform owns (nobody sends PromQL);
each series is the query's label set and its points, ``(unix seconds, value)``, with the
points Prometheus has no number for (no samples, a quantile of nothing) left out.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "MAX_CONSOLE_MINUTES",
    "MIN_CONSOLE_MINUTES",
    "ChartSeries",
    "ChartUnit",
    "ConsoleChart",
    "ConsoleChartsResponse",
]

#: The shortest and longest window the console charts, minutes (a day at most: the store
#: keeps a few, and a wider window only thins the points).
MIN_CONSOLE_MINUTES = 5
MAX_CONSOLE_MINUTES = 24 * 60

#: How a chart's values read: per second, per minute, seconds, bytes, a 0-1 share, a count.
ChartUnit = Literal["per_second", "per_minute", "seconds", "bytes", "ratio", "count"]


class _Answer(BaseModel):
    model_config = ConfigDict(frozen=True)


class ChartSeries(_Answer):
    """One line of a chart: its labels (``service``; ``node``, ``gpu``) and its points."""

    labels: dict[str, str]
    points: list[tuple[float, float]] = Field(
        description="(unix seconds, value), oldest first; no point where there was no value."
    )


class ConsoleChart(_Answer):
    """One chart: its name, title, unit and the series its query answered (maybe none)."""

    name: str
    title: str
    unit: ChartUnit
    series: list[ChartSeries]


class ConsoleChartsResponse(_Answer):
    """Every chart over the window ``start`` to ``end`` (unix seconds), a point every
    ``step_seconds``, and the Prometheus they come from (for Grafana)."""

    prometheus_url: str
    start: float
    end: float
    step_seconds: Annotated[int, Field(ge=1)]
    charts: list[ConsoleChart]
