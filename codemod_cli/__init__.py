"""The `codemod` command line: one typer app joining `run` (the static engine), `verify` and `bot`.

It sits above both packages, so that `codemods` never imports `bot`: `run` calls `codemods.engine`,
`verify` and `bot` call `bot`. Each command imports what it needs when it runs, so `codemod run`
never pays for torch or PyGithub.

May import: codemods, codemods.engine, codemods.output, codemods.project, codemods.rules, bot, bot.github, bot.github.dashboard, bot.verify, bot.verify.checkout, bot.verify.reporting
"""
