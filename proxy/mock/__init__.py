"""A deterministic, strict stand-in for the Gemini API, for tests, demos and benchmarks."""
