"""The engine: the one data path behind the CLI, the pre-commit hook and the bot.

It owns a run from paths to results: discovery (which files), the scan cache, detection in worker
processes (`scan`), what resolving will read outside the trees, read while they scan (`read_ahead`), the
fix loop and the proof before writing (`fixing`, `fix_loop`, `apply`), the `# Copied from` declines, what
each finding costs across the tree (asked of `analysis.models.frequency`), the run's options and result
(`run_result`), and what a run reads first, a check's known result included (`run_inputs`, `result_cache`).
`entry.run()` is the entry.

May import: codemods, codemods.project, codemods.analysis.models, codemods.edits, codemods.rules
"""
