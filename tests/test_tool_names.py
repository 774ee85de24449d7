"""Tool names Gemini accepts, collision-free, always mapped back to the client's own names."""

from proxy.tools.tool_names import GEMINI_NAME, ToolNames


def test_invalid_names_are_made_valid_without_collisions() -> None:
    names = ToolNames()
    clients = ["server/tool", "server_tool", "9lives", "ünïcode", "x" * 80, "x" * 80 + "y", "ok-name.v2:a"]
    gemini = [names.add(n) for n in clients]
    assert all(GEMINI_NAME.match(g) for g in gemini)
    assert len(set(gemini)) == len(clients), "no two client names share a Gemini name"
    assert [names.client(g) for g in gemini] == clients
    assert gemini[-1] == "ok-name.v2:a", "valid names are kept as they are"


def test_namespaces_flatten_and_map_back() -> None:
    names = ToolNames()
    g = names.add("close_agent", namespace="multi_agent_v1")
    assert g == "multi_agent_v1__close_agent"
    ref = names.ref(g)
    assert (ref.name, ref.namespace, ref.kind) == ("close_agent", "multi_agent_v1", "function")
    assert names.to_gemini("close_agent", "multi_agent_v1") == g
