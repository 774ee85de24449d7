"""The Gemini peer: Google's Gemini API (the Developer API's generateContent and
streamGenerateContent, the passed-through methods such as countTokens, or any server speaking it: the
mock, a local gateway) and Gemini on Vertex AI (vertex.py), reached with the client's key or the
server's pool of API keys and Google credentials files (key_pool.py, credentials.py); the client
(client.py) adds only Gemini's URLs, headers, errors, chunks and continuation hops to the one HTTP
engine (upstream/http.py)."""
