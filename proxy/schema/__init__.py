"""JSON Schema work: converting client schemas for Gemini, resolving refs, fixing arguments against them."""
