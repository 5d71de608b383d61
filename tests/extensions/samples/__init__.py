"""Extensions the loader tests load by module path, one per way an extension can be good or bad."""
