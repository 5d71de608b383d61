"""Model access: an OpenAI-compatible client, the model router, and token accounting."""
