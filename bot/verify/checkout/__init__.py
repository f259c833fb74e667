"""The checkout under verification: its own environment (`environment`, `requirements`), its own tests
run on both trees (`own_tests`, with a pytest plugin), the tests a change turns on (`turned_on_tests`),
and its repository checks (`repo_checks`, read from its CI by `repo_check_list`).

May import: codemods.edits, codemods.project, bot.verify.planning, bot.verify.running
"""
