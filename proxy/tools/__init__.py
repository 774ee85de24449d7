"""Client tools <-> Gemini function declarations: names, tool_choice, forced choice, schema modes."""
