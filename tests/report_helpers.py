"""A report the tests load through a config's ``ReportWriter`` (``class_path``)."""

from __future__ import annotations

from pathlib import Path

from vecset.pipelines.reports.base import Report, ReportContext


class Broken(Report):
    """A report that always fails, as a report with a bug would."""

    def write(self, ctx: ReportContext) -> list[Path]:
        raise RuntimeError("mat1 and mat2 must have the same dtype")
