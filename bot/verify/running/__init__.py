"""Running the targets: one worker interpreter per tree (`runner`, `worker`, `protocol`), the outputs a target
yields (`outputs`), the lines it ran and the output objects it built (`tracing`), and compile limits; the verify
run's fork server (`zygote`, `zygote_server`, `zygote_child`), which forks the workers and the checkout's own tests
where it can.

May import: bot, bot.verify.census, bot.verify.real_scale, bot.verify.targets
"""
