"""The fleet: what each board should run, what happened to it, and the lock over its state."""
