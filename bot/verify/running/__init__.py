"""Running the targets: one worker interpreter per tree (`runner`, `worker`, `protocol`), what a target
builds and runs (`workload`), the outputs it yields, the lines it ran (`tracing`) and compile limits.

May import: codemods, bot.verify
"""
