"""The checkout under verification: its own environment (`environment`, `requirements`), its own tests
run on both trees (`own_tests`, with a pytest plugin), and its repository checks (`repo_checks`).

May import: codemods, bot.verify
"""
