"""Planning a verification: what the engine changed (`changes`), which targets reach each change (`plan`),
and which of the checkout's own tests cover the changed files or are turned on by them. No torch.

May import: codemods, bot.verify
"""
