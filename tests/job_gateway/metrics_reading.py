"""Reading a service's ``GET /metrics`` over HTTP, as Prometheus would."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families


def metric_value(http: httpx.Client, sample: str, **labels: str) -> float:
    """The value of the sample ``sample`` whose labels include ``labels``; 0 when absent."""
    response = http.get("/metrics")
    response.raise_for_status()
    for family in text_string_to_metric_families(response.text):
        for found in family.samples:
            if found.name == sample and labels.items() <= found.labels.items():
                return float(found.value)
    return 0.0
