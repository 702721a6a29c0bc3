"""Lab-wide rollout: planning (pure), recorded state, and the engine that drives it."""
