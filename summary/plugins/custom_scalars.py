"""Custom Scalars layout (`custom_scalars` plugin): one `Layout` proto, stored
as a scalar string tensor under the tag `custom_scalars__config__`.

The layout dict is PyTorch's: `{category: {chart title: ["Multiline", [tag
regexes]] or ["Margin", [value, lower, upper]]}}`.
"""

from __future__ import annotations

from typing import Any, Mapping

from tensorboard.compat.proto import summary_pb2
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.plugins.custom_scalar import metadata as cs_md
from tensorboard.util import tensor_util

from jitflow.summary.values import describe

CONFIG_TAG = cs_md.CONFIG_SUMMARY_TAG


def _tags(value: Any, where: str) -> list[str]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(t, str) for t in value):
        raise TypeError(f"{where}: expected a list of tag strings, got {describe(value)}")
    return list(value)


def layout_proto(layout: Mapping[str, Mapping[str, Any]]) -> layout_pb2.Layout:
    if not isinstance(layout, Mapping):
        raise TypeError(f"layout: expected a dict {{category: {{title: [kind, tags]}}}}, got {describe(layout)}")
    categories = []
    for cat, charts in layout.items():
        if not isinstance(cat, str) or not isinstance(charts, Mapping):
            raise TypeError(f"layout[{cat!r}]: expected a str category mapping to a dict of charts, "
                            f"got {describe(charts)}")
        protos = []
        for title, spec in charts.items():
            where = f"layout[{cat!r}][{title!r}]"
            if (not isinstance(spec, (list, tuple)) or len(spec) != 2
                    or spec[0] not in ("Multiline", "Margin")):
                raise ValueError(f"{where}: expected ['Multiline', [tags]] or ['Margin', [value, lower, upper]], "
                                 f"got {spec!r}")
            tags = _tags(spec[1], where)
            if spec[0] == "Margin":
                if len(tags) != 3:
                    raise ValueError(f"{where}: a Margin chart needs exactly 3 tags (value, lower, upper), "
                                     f"got {len(tags)}")
                series = layout_pb2.MarginChartContent.Series(value=tags[0], lower=tags[1], upper=tags[2])
                protos.append(layout_pb2.Chart(title=str(title),
                                               margin=layout_pb2.MarginChartContent(series=[series])))
            else:
                protos.append(layout_pb2.Chart(title=str(title),
                                               multiline=layout_pb2.MultilineChartContent(tag=tags)))
        categories.append(layout_pb2.Category(title=cat, chart=protos))
    return layout_pb2.Layout(category=categories)


def layout_value(layout: layout_pb2.Layout) -> summary_pb2.Summary.Value:
    md = cs_md.create_summary_metadata()
    return summary_pb2.Summary.Value(tag=CONFIG_TAG, metadata=md,
                                     tensor=tensor_util.make_tensor_proto(layout.SerializeToString()))
