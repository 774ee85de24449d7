"""The Interactions peer (`--upstream-api interactions`): Google's Interactions API
(`POST /{version}/interactions`) answering Gemini bodies instead of generateContent, with its
server-side state (previous_interaction_id) and hop-by-hop continuation; request.py and answer.py
translate Gemini bodies to interactions and back, continuation.py merges the hops, and the client
(client.py) runs over the Gemini client and so over the one HTTP engine (upstream/http.py)."""
