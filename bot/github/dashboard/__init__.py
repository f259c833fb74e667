"""The dashboard issue: one per target repository, where the bot lists everything it knows.

`ticks` (the checkboxes and what a maintainer ticked), `issue` (finding, creating and editing it
on GitHub), `render` and `layout` (the body, under GitHub's size limit; `census_table` its census), `update`
(its part in a run).

May import: codemods, codemods.output, codemods.rules, bot, bot.github, bot.verify.reporting
"""
