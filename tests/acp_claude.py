"""Claude Code headless through antigravity-claude-proxy: start the proxy (its global fetch sent through
HTTPS_PROXY by a preload, tests/node/env_proxy.mjs), wait for its port, run `claude -p PROMPT` with
ANTHROPIC_BASE_URL at it, stop the proxy. A relay command for tests/test_claude_code_antigravity.py.

    python tests/acp_claude.py --acp BIN --claude BIN --shim FILE --port N --model M PROMPT

HOME, HTTPS_PROXY and NODE_EXTRA_CA_CERTS come from the environment.
"""

import argparse
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: never outlive this wrapper


def main() -> int:
    p = argparse.ArgumentParser()
    for name in ("--acp", "--claude", "--shim", "--model", "--log"):
        p.add_argument(name, required=name != "--log")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("prompt")
    args = p.parse_args()
    base = {k: os.environ[k] for k in ("PATH", "HOME", "HTTPS_PROXY", "NODE_EXTRA_CA_CERTS") if k in os.environ}
    log = open(args.log, "a") if args.log else subprocess.DEVNULL  # noqa: SIM115 - the process's lifetime
    acp = subprocess.Popen([args.acp, "start"], env={**base, "PORT": str(args.port), "NO_PROXY": "",
                                                     "NODE_OPTIONS": f"--import={args.shim}"},
                           stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", args.port), timeout=1).close()
                break
            except OSError:
                if acp.poll() is not None or time.monotonic() > deadline:
                    print("antigravity-claude-proxy did not start", file=sys.stderr)
                    return 1
                time.sleep(0.1)
        env = {**base, "NO_PROXY": "127.0.0.1,localhost", "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{args.port}",
               "ANTHROPIC_AUTH_TOKEN": "test", "ANTHROPIC_MODEL": args.model,
               "ANTHROPIC_SMALL_FAST_MODEL": args.model, "ANTHROPIC_DEFAULT_HAIKU_MODEL": args.model,
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "IS_SANDBOX": "1"}
        return subprocess.run([args.claude, "-p", args.prompt, "--permission-mode", "bypassPermissions"], env=env,
                              stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, timeout=120,
                              preexec_fn=_die_with_parent).returncode
    finally:
        acp.terminate()
        try:
            acp.wait(10)
        except subprocess.TimeoutExpired:
            acp.kill()


if __name__ == "__main__":
    sys.exit(main())
