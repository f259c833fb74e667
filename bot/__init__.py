"""The bot: verifies codemod fixes and opens the pull requests. Built on `codemods`, never the reverse.

Its own modules are the bot's vocabulary and doors: fix groups (`groups`), a plan that jobs pass on
(`plan`), the verification record (`verification`), the run summary (`summary`) and the doors that
run them (`runner`). `verify` judges fixes on both trees; `github` does git and GitHub.

May import: codemods.engine, codemods.project, codemods.rules, bot.github, bot.github.dashboard, bot.verify, bot.verify.checkout, bot.verify.planning, bot.verify.reporting, bot.verify.running
"""
