"""Running the targets: one worker interpreter per tree (`runner`, `worker`, `protocol`; forked by the verify run's
`zygote` where it can be), the outputs a target yields (`outputs`), the lines it ran and the output objects it built
(`tracing`), and compile limits.

May import: bot, bot.verify.census, bot.verify.real_scale, bot.verify.targets
"""
