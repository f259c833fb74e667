"""The verification report: per target, what changed, what was measured, the verdict; as JSON, the
PR body's Markdown (`report`), one self-contained HTML page (`html_report`), and the library-wide figures
the page and the dashboard share (`census_summary`).

May import: bot.verify.checkout, bot.verify.judging, bot.verify.real_scale
"""
