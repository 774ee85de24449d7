"""Run by tests/test_anthropic_threads.py under another anthropic release (its own venv: the script
imports nothing of the project): `beta.messages.tool_runner()` with a two-round tool loop, plain and
streamed, on each model given; prints one JSON line per run with every request's `thread` field and
message count, every answer's status, and the final text."""

import json
import sys

import anthropic
from anthropic import beta_tool


def run(url: str, model: str, stream: bool) -> dict:
    sent: list = []
    statuses: list = []

    def request(r) -> None:  # noqa: ANN001
        body = json.loads(r.content)
        sent.append({"thread": body.get("thread"), "messages": len(body["messages"]),
                     "tools": "tools" in body, "beta": r.headers.get("anthropic-beta", "")})

    http = anthropic.DefaultHttpxClient(event_hooks={"request": [request],
                                                     "response": [lambda r: statuses.append(r.status_code)]})
    client = anthropic.Anthropic(base_url=url, api_key="k", max_retries=0, _strict_response_validation=True,
                                 http_client=http)

    @beta_tool
    def get_weather(location: str) -> str:
        """Get the current weather in a place."""
        return f"Sunny in {location}"

    runner = client.beta.messages.tool_runner(
        model=model, max_tokens=500, tools=[get_weather], stream=stream,
        messages=[{"role": "user", "content": "What's the weather in Paris? get_weather [[mock:rounds 2]]"}])
    for item in runner:
        if stream:
            for _ in item:
                pass
    final = runner.until_done()
    return {"model": model, "stream": stream, "version": anthropic.__version__, "sent": sent, "statuses": statuses,
            "text": final.content[-1].text if final.content and final.content[-1].type == "text" else None}


if __name__ == "__main__":
    for model in sys.argv[2:]:
        for stream in (False, True):
            print(json.dumps(run(sys.argv[1], model, stream)), flush=True)
