"""The verification report: per target, what changed, what was measured, the verdict; as JSON, the
PR body's Markdown (`report`) and one self-contained HTML page (`html_report`).

May import: codemods, bot.verify
"""
