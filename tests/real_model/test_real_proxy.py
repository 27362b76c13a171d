"""`diarist proxy` in front of the real Qwen2.5-Coder-0.5B (`diarist serve-model`), talked to
with the `openai` package as any client would: streaming and not, the turns in the log, and
memory from one conversation injected into a second."""
from __future__ import annotations

import json

import openai

from events import EventLog, Home
from tests.test_proxy import Proxy


def _session_turns(home: Home) -> list[tuple[str, str, str, str]]:
    with EventLog(home.events_db) as log:
        return [(e.payload["session"], e.type, e.payload["text"], e.id) for e in log.iter_all()
                if e.type in ("UserTurn", "AssistantTurn")]


def test_the_openai_client_through_the_proxy_to_the_real_model(llm_server: str,
                                                               home: Home) -> None:
    proxy = Proxy(home, llm_server).start()
    try:
        client = openai.OpenAI(base_url=proxy.url, api_key="none", max_retries=0, timeout=300)
        model = client.models.list().data[0].id
        said = "My sister Ottoline moved to Reykjavik last spring, she teaches violin there."
        plain = client.chat.completions.create(
            model=model, max_tokens=24, temperature=0,
            messages=[{"role": "user", "content": said}])
        reply = plain.choices[0].message.content or ""
        assert reply.strip() and plain.usage and plain.usage.completion_tokens <= 24
        streamed = ""
        for chunk in client.chat.completions.create(
                model=model, max_tokens=24, temperature=0, stream=True,
                messages=[{"role": "user", "content": "Where does Ottoline live now?"}]):
            streamed += chunk.choices[0].delta.content or "" if chunk.choices else ""
        assert streamed.strip()
    finally:
        proxy.stop()
    turns = _session_turns(home)
    assert [(t, text) for _, t, text, _ in turns] == [
        ("UserTurn", said), ("AssistantTurn", reply),
        ("UserTurn", "Where does Ottoline live now?"), ("AssistantTurn", streamed)]
    first, second = turns[0][0], turns[2][0]
    assert first != second  # two conversations, two sessions
    with EventLog(home.events_db) as log:
        injected = [e.payload for e in log.iter_all() if e.type == "MemoryInjected"
                    and e.payload["session"] == second and e.payload["items"]]
    # what the person said in the first conversation is in the second one's prompt
    items = json.dumps([p["items"] for p in injected])
    assert turns[0][3] in items, f"the first conversation's turn was not injected: {items}"
