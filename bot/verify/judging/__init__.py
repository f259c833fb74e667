"""The verdict: what counts as verified per rule (`verdict`), one target's result on both trees
(`target_result`), and how much of a run says something (`coverage`).

May import: bot.verify.planning, bot.verify.reporting, bot.verify.running, bot.verify.targets
"""
