"""Developer tools of this repository (release sweep, release sources for tests); not part of the package."""
