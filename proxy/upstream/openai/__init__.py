"""The OpenAI-compatible peer (`--openai-upstream PATTERN=BASE_URL`): local servers speaking Chat
Completions (vLLM, Ollama, llama.cpp, LM Studio, EXO), asked with Gemini bodies translated to Chat
requests (request.py) and answering Chat answers translated back to Gemini's (answer.py), with
two-pass thinking for the models that need it (two_pass.py); the client (client.py) adds only the
peer's URL, headers, errors and chunks to the one HTTP engine (upstream/http.py)."""
