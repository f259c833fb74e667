"""Verification of fixes: emulated device, sync/copy census, CUDA profile census."""
