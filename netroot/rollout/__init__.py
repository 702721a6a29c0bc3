"""Rolling a version out across the fleet: the plan (pure), the engine that drives it batch
by batch, and the real boards behind it (drive.py)."""
