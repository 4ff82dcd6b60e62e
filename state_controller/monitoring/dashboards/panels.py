"""The few shapes every hoststate dashboard is made of, on grafana-foundation-sdk's builders.

Each helper returns a builder; the dashboards only say what to show. Queries
are PromQL over the families of ``observability/metrics/``; the datasource
and the namespace are template variables, so nothing names a cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# The classic dashboard model and builder, deprecated by the SDK for dashboardv2 (the v2
# resource Grafana's file provisioning rejects): the reason, and the warning filter, are
# in pyproject.toml's [tool.pytest.ini_options].
from grafana_foundation_sdk.builders import dashboard as d
from grafana_foundation_sdk.builders import prometheus, stat, statetimeline, table, timeseries
from grafana_foundation_sdk.cog.builder import Builder
from grafana_foundation_sdk.cog.variants import Dataquery
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as m
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

from ...api.states import ProvisioningState
from ...api.updates import UpdateStep

DATASOURCE = common.DataSourceRef(type_val="prometheus", uid="${datasource}")
RATE = "$__rate_interval"
REF_IDS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
# The namespace of the Hosts (the label the hoststate_* series carry); "All" matches any.
IN_NAMESPACE = 'namespace=~"$namespace"'

Query = tuple[str, str]  # (PromQL, legend)
Codes = Mapping[ProvisioningState, int] | Mapping[UpdateStep, int]  # STATE_CODES, STEP_CODES


def datasource_variable() -> d.DatasourceVariable:
    return d.DatasourceVariable("datasource").label("Data source").type("prometheus")


def label_variable(
    name: str, title: str, query: str, *, label: str = "", every: bool = True
) -> d.QueryVariable:
    """A variable whose values are a label's values (``label_values(query, label)``);
    the label is the variable's name unless given. ``every``: several values and All."""
    label = label or name
    variable = (
        d.QueryVariable(name)
        .label(title)
        .datasource(DATASOURCE)
        .query({"query": f"label_values({query}, {label})", "refId": name})
        .definition(f"label_values({query}, {label})")
        .refresh(m.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(m.VariableSort.ALPHABETICAL_ASC)
        .multi(every)
    )
    if every:
        variable = variable.include_all(True).all_value(".*")
    return variable


def targets(queries: Sequence[Query], *, instant: bool = False) -> list[Builder[Dataquery]]:
    built: list[Builder[Dataquery]] = []
    for ref, (expr, legend) in zip(REF_IDS, queries, strict=False):
        query = prometheus.Dataquery().expr(expr).ref_id(ref).datasource(DATASOURCE)
        if legend:
            query = query.legend_format(legend)
        if instant:
            query = query.instant().format(PromQueryFormat.TABLE)
        built.append(query)
    return built


def graph(
    title: str, queries: Sequence[Query], *, unit: str = "short", width: int = 12, about: str = ""
) -> timeseries.Panel:
    panel = (
        timeseries.Panel()
        .title(title)
        .datasource(DATASOURCE)
        .targets(targets(queries))
        .unit(unit)
        .span(width)
        .height(8)
        .fill_opacity(10)
    )
    return panel.description(about) if about else panel


def number(
    title: str,
    queries: str | Sequence[Query],
    *,
    unit: str = "short",
    width: int = 6,
    about: str = "",
    names: Codes | None = None,
) -> stat.Panel:
    """A stat: one big number per series (``names``: show codes as their names)."""
    panel = (
        stat.Panel()
        .title(title)
        .datasource(DATASOURCE)
        .targets(targets([(queries, "")] if isinstance(queries, str) else queries))
        .unit(unit)
        .span(width)
        .height(4)
    )
    if names is not None:
        panel = panel.mappings(value_names(names))
    return panel.description(about) if about else panel


def listing(
    title: str,
    queries: Sequence[Query],
    *,
    columns: Mapping[str, str],
    unit: str = "s",
    width: int = 24,
    about: str = "",
    names: Mapping[str, Codes] | None = None,
) -> table.Panel:
    """An instant table: one row per series, its labels as columns. ``columns`` renames
    and orders the columns shown (several queries are merged on their labels, their
    values being ``Value #A``, ``Value #B``…); ``names`` shows a column's codes as names."""
    organize = {
        "renameByName": dict(columns),
        "indexByName": {name: index for index, name in enumerate(columns)},
        "excludeByName": {"Time": True, "__name__": True, "job": True, "instance": True},
    }
    panel = (
        table.Panel()
        .title(title)
        .datasource(DATASOURCE)
        .targets(targets(queries, instant=True))
        .unit(unit)
        .span(width)
        .height(8)
    )
    if len(queries) > 1:
        panel = panel.with_transformation(m.DataTransformerConfig(id_val="merge", options={}))
    panel = panel.with_transformation(m.DataTransformerConfig(id_val="organize", options=organize))
    for column, codes in (names or {}).items():
        panel = panel.override_by_name(
            column,
            [
                m.DynamicConfigValue(id_val="mappings", value=value_names(codes)),
                m.DynamicConfigValue(id_val="unit", value="none"),
            ],
        )
    return panel.description(about) if about else panel


def timeline(
    title: str, queries: Sequence[Query], names: Codes, *, width: int = 24
) -> statetimeline.Panel:
    """A state timeline of a series whose value is a code (``STATE_CODES``, ``STEP_CODES``)."""
    return (
        statetimeline.Panel()
        .title(title)
        .datasource(DATASOURCE)
        .targets(targets(queries))
        .mappings(value_names(names))
        .span(width)
        .height(6)
    )


def value_names(
    codes: Codes,
) -> list[m.ValueMap | m.RangeMap | m.RegexMap | m.SpecialValueMap]:
    """Grafana value mappings from a code table: each code shows as its name."""
    options = {
        str(code): m.ValueMappingResult(text=name.value or "none", index=code)
        for name, code in codes.items()
    }
    return [m.ValueMap(options=options)]


def row(title: str) -> d.Row:
    return d.Row(title)


def new_dashboard(uid: str, title: str, about: str, *, tags: Sequence[str] = ()) -> d.Dashboard:
    return (
        d.Dashboard(title)
        .uid(uid)
        .description(about)
        .tags(["hoststate", *tags])
        .editable()
        .refresh("30s")
        .time("now-6h", "now")
        .timezone("browser")
        .with_variable(datasource_variable())
    )
