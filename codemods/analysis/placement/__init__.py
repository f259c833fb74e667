"""Placement: where a value lives (the accelerator, the host, or no tensor), from where it was made or
moved (`function_places`, memoized across cycles of bindings by `cycle_memo`; `call_places`, `class_places`,
`device_places`), and what makes the host read a device tensor (`host_reads`, `host_built`, `mask_guards`) or
build host data every call (`host_factories`).

May import: codemods, codemods.analysis.values, codemods.analysis.models, codemods.analysis.schedules
"""
