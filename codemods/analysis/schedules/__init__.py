"""Schedules and sigmas: which calls set a scheduler's schedule and on what device (`schedule_calls`),
which schedulers a denoising loop steps, whether its first step is at the schedule's start, how a
scheduler finds its step index, and how its sigmas flow (`sigma_*`).

May import: codemods, codemods.project, codemods.analysis.values, codemods.analysis.models, codemods.analysis.placement
"""
