"""Program analysis the rules build on, static (no torch, no diffusers), split by what it knows:
`values` (bindings, types, moves), `models` (hot paths, denoisers, what a module builds and keeps),
`placement` (where a tensor lives, what makes the host read it) and `schedules` (schedules and sigmas).
The subpackages may ask one another (placement asks which calls set a schedule; schedules ask where
a value lives), but no module imports one that imports it back, and none reaches above `analysis`.

May import: only its subpackages
"""
