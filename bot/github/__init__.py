"""GitHub and git for the bot: clone and push (`git`), PyGithub configured never to write twice (`api`),
the bot's pull requests (`pulls`), what it may do given what GitHub holds (`etiquette`), the words a
maintainer reads (`body`), one group's publication (`publish`) and the dashboard issue (`dashboard`).

May import: codemods, codemods.output, codemods.rules, bot, bot.github.dashboard
"""
