"""The bot: verifies codemod fixes and opens the pull requests."""
