"""A stand-in relay app: a Gemini client that knows nothing of tools.

It sends one streaming request with the prompt it is given through the proxy, then (like an agent
that keeps going) a follow-up with its own history, and appends what it was answered to --log.
"""

import argparse
import json
import ssl
import urllib.request

URL = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"


def send(opener: urllib.request.OpenerDirector, contents: list) -> str:
    req = urllib.request.Request(URL, data=json.dumps({"contents": contents}).encode(),
                                 headers={"content-type": "application/json", "x-goog-api-key": "relay-key"})
    with opener.open(req, timeout=60) as r:
        events = [json.loads(line[6:]) for line in r.read().decode().splitlines() if line.startswith("data: ")]
    return "".join(p.get("text", "") for e in events for p in e["candidates"][0]["content"]["parts"])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--proxy", required=True)
    p.add_argument("--ca", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("prompt")
    args = p.parse_args()
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"https": args.proxy}),
                                         urllib.request.HTTPSHandler(context=ssl.create_default_context(
                                             cafile=args.ca)))
    history = [{"role": "user", "parts": [{"text": args.prompt}]}]
    first = send(opener, history)
    history += [{"role": "model", "parts": [{"text": first}]}, {"role": "user", "parts": [{"text": "."}]}]
    follow_up = send(opener, history)
    with open(args.log, "a") as f:
        f.write(json.dumps({"prompt": args.prompt, "first": first, "follow_up": follow_up}) + "\n")


if __name__ == "__main__":
    main()
