"""`diarist proxy`: a real proxy process in front of a fake upstream (a real HTTP server on
127.0.0.1 speaking OpenAI's JSON and SSE), talked to with the `openai` package. The real
model behind the proxy: tests/real_model/test_real_proxy.py."""
from __future__ import annotations

import json
import os
import re
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import openai
import pytest

from events import EventLog, Home
from tests import llm_server
from tests.conftest import diarist_cmd, free_port, stop_process
from workers.chat.instruction import BRIEF, GENERAL
from workers.models.llama_server import MINING_MODEL

REPLY = "Noted, that sounds lovely."


def _completion(text: str) -> dict:
    return {"id": "cmpl-1", "object": "chat.completion", "created": 1, "model": "fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}}


def _chunks(text: str, *, complete: bool = True) -> list[bytes]:
    def chunk(delta: dict, finish: str | None = None) -> bytes:
        body = {"id": "cmpl-1", "object": "chat.completion.chunk", "created": 1,
                "model": "fake", "choices": [{"index": 0, "delta": delta,
                                              "finish_reason": finish}]}
        return f"data: {json.dumps(body)}\n\n".encode()

    words = text.split(" ")
    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": (" " if i else "") + w}) for i, w in enumerate(words)]
    if complete:
        out += [chunk({}, "stop"), b"data: [DONE]\n\n"]
    return out


def _upstream(handler: type[llm_server.Handler], reply: Callable[[dict], str] = lambda _: REPLY,
              *, broken: bool = False) -> None:
    def completions(h: llm_server.Handler, body: dict) -> None:
        text = reply(body)
        if body.get("stream"):
            h.send_stream("text/event-stream", _chunks(text, complete=not broken))
        else:
            h.send_json(200, _completion(text))

    handler.routes[("POST", "/v1/chat/completions")] = completions
    handler.routes[("GET", "/v1/models")] = lambda h, _b: h.send_json(
        200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
    handler.routes[("GET", "/props")] = lambda h, _b: h.send_json(
        200, {"default_generation_settings": {"n_ctx": 2048}})


def _wait(url: str, proc: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the proxy exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2):
                return
        except urllib.error.HTTPError:  # the proxy answers (the upstream may not)
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("the proxy did not start")


@pytest.fixture
def upstream() -> Iterator[tuple[str, type[llm_server.Handler]]]:
    with llm_server.serve() as (url, handler):
        _upstream(handler)
        yield url, handler


class Proxy:
    def __init__(self, home: Home, upstream_url: str) -> None:
        self.home, self.upstream_url = home, upstream_url
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.proc: subprocess.Popen | None = None

    def start(self) -> Proxy:
        env = dict(os.environ, DIARIST_HOME=str(self.home.root))
        self.proc = subprocess.Popen(
            [*diarist_cmd(), "proxy", "--upstream", self.upstream_url, "--port", str(self.port)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            _wait(self.url, self.proc)
        except BaseException:  # never leave a proxy running behind a failed start
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            raise
        return self

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
            self.proc = None

    def client(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.url, api_key="sk-none", max_retries=0, timeout=30)


@pytest.fixture
def proxy(home: Home, upstream: tuple[str, type[llm_server.Handler]]) -> Iterator[Proxy]:
    running = Proxy(home, upstream[0]).start()
    try:
        yield running
    finally:
        running.stop()


def _events(home: Home, *types: str) -> list:
    with EventLog(home.events_db) as log:
        return [e for e in log.iter_all() if not types or e.type in types]


def _turns(home: Home) -> list[tuple[str, str, str]]:
    return [(e.payload["session"], e.type, e.payload["text"])
            for e in _events(home, "UserTurn", "AssistantTurn")]


def _chat(client: openai.OpenAI, messages: list[dict], *, stream: bool = False,
          model: str = "fake") -> str:
    if not stream:
        reply = client.chat.completions.create(model=model, messages=messages)  # type: ignore[arg-type]
        return reply.choices[0].message.content or ""
    pieces = client.chat.completions.create(model=model, messages=messages,  # type: ignore[arg-type]
                                            stream=True)
    return "".join(c.choices[0].delta.content or "" for c in pieces if c.choices)


def test_a_reply_reaches_the_client_unchanged_and_both_turns_are_in_the_log(
        home: Home, proxy: Proxy) -> None:
    client = proxy.client()
    assert _chat(client, [{"role": "user", "content": "I keep bees on the allotment."}]) == REPLY
    assert _chat(client, [{"role": "user", "content": "My cat is called Pip."}],
                 stream=True) == REPLY
    turns = _turns(home)
    assert [(t, text) for _, t, text in turns] == [
        ("UserTurn", "I keep bees on the allotment."), ("AssistantTurn", REPLY),
        ("UserTurn", "My cat is called Pip."), ("AssistantTurn", REPLY)]
    started = _events(home, "SessionStarted")
    assert [e.payload["backend"] for e in started] == ["proxy", "proxy"]
    assert len({session for session, _, _ in turns}) == 2  # two conversations, two sessions
    replies = _events(home, "AssistantTurn")
    assert replies[0].payload["reply_tokens"] == 5 and replies[0].payload["name"] == "fake"
    assert all(not e.payload["interrupted"] for e in replies)


def test_the_same_earlier_messages_continue_the_same_session_even_after_a_restart(
        home: Home, proxy: Proxy) -> None:
    first = [{"role": "system", "content": "You are terse."},
             {"role": "user", "content": "I am repainting the shed green."}]
    _chat(proxy.client(), first)
    second = [*first, {"role": "assistant", "content": REPLY},
              {"role": "user", "content": "Which green, though?"}]
    _chat(proxy.client(), second, stream=True)
    proxy.stop()
    proxy.start()
    third = [*second, {"role": "assistant", "content": REPLY},
             {"role": "user", "content": "Sage it is."}]
    _chat(proxy.client(), third)
    sessions = [session for session, _, _ in _turns(home)]
    assert len(sessions) == 6 and len(set(sessions)) == 1
    assert len(_events(home, "SessionStarted")) == 1


def test_memory_from_one_conversation_is_injected_into_another(
        home: Home, proxy: Proxy, upstream: tuple[str, type[llm_server.Handler]]) -> None:
    _, handler = upstream
    _chat(proxy.client(), [{"role": "user",
                            "content": "My sister Ottoline moved to Reykjavik last spring."}])
    _chat(proxy.client(), [{"role": "user", "content": "Hello again."}])
    handler.seen.clear()
    _chat(proxy.client(), [{"role": "user", "content": "Hello again."},
                           {"role": "assistant", "content": REPLY},
                           {"role": "user", "content": "Where did Ottoline move to?"}])
    sent = [s["body"] for s in handler.seen if s["path"] == "/v1/chat/completions"][-1]
    prompt = json.dumps(sent["messages"])
    assert "Reykjavik" in prompt  # the client never said it in this conversation
    # the client sent no system message: the chat's, telling the day the lines are read from
    assert sent["messages"][0]["role"] == "system"
    assert re.search(r"Today is \w+day, \d+ \w+ \d{4}\.", sent["messages"][0]["content"])
    assert sent["messages"][0]["content"].startswith(GENERAL)
    assert sent["messages"][-1]["content"].endswith("Where did Ottoline move to?")
    injected = _events(home, "MemoryInjected")
    session = _turns(home)[-1][0]
    assert any(e.payload["session"] == session and e.payload["items"] for e in injected)
    # the model asked for has an instruction of its own: the chat's for that model
    handler.seen.clear()
    _chat(proxy.client(), [{"role": "user", "content": "Where is Ottoline now?"}],
          model=MINING_MODEL.alias)
    sent = [s["body"] for s in handler.seen if s["path"] == "/v1/chat/completions"][-1]
    assert sent["messages"][0]["content"].startswith(BRIEF)


def test_the_prompt_prefix_stays_the_same_within_a_session(
        home: Home, proxy: Proxy, upstream: tuple[str, type[llm_server.Handler]]) -> None:
    """The start block and each message's note are the same in every later request, so a
    server's prompt cache keeps the prefix."""
    _, handler = upstream
    _chat(proxy.client(), [{"role": "user", "content": "Our boat Curlew needs new sails."}])
    handler.seen.clear()
    first = [{"role": "user", "content": "Tell me about sails for Curlew."}]
    _chat(proxy.client(), first)
    _chat(proxy.client(), [*first, {"role": "assistant", "content": REPLY},
                           {"role": "user", "content": "And the cost?"}])
    bodies = [s["body"]["messages"] for s in handler.seen
              if s["path"] == "/v1/chat/completions"]
    assert len(bodies) == 2
    assert bodies[1][:len(bodies[0])] == bodies[0]
    assert "Curlew needs new sails" in json.dumps(bodies[0])


def test_upstream_errors_pass_through_and_the_user_turn_is_kept(
        home: Home, proxy: Proxy, upstream: tuple[str, type[llm_server.Handler]]) -> None:
    _, handler = upstream
    handler.routes[("POST", "/v1/chat/completions")] = lambda h, _b: h.send_json(
        400, {"error": {"message": "the request exceeds the available context size",
                        "type": "exceed_context_size_error", "code": 400}})
    with pytest.raises(openai.BadRequestError, match="exceeds the available context"):
        _chat(proxy.client(), [{"role": "user", "content": "A very long question."}])
    with pytest.raises(openai.BadRequestError, match="exceeds the available context"):
        _chat(proxy.client(), [{"role": "user", "content": "Streamed, too."}], stream=True)
    assert [(t, text) for _, t, text in _turns(home)] == [
        ("UserTurn", "A very long question."), ("UserTurn", "Streamed, too.")]


def test_an_unreachable_upstream_is_a_502_in_openais_shape(home: Home) -> None:
    proxy = Proxy(home, f"http://127.0.0.1:{free_port()}/v1").start()
    try:
        with pytest.raises(openai.APIStatusError) as caught:
            _chat(proxy.client(), [{"role": "user", "content": "Anyone there?"}])
        assert caught.value.status_code == 502
        assert "cannot be reached" in caught.value.message
    finally:
        proxy.stop()
    assert [(t, text) for _, t, text in _turns(home)] == [("UserTurn", "Anyone there?")]


def test_a_stream_broken_mid_reply_keeps_the_partial_reply(
        home: Home, upstream: tuple[str, type[llm_server.Handler]]) -> None:
    url, handler = upstream
    _upstream(handler, lambda _: "The first half of a reply", broken=True)
    proxy = Proxy(home, url).start()
    try:
        received = ""
        with pytest.raises(openai.APIError):
            for chunk in proxy.client().chat.completions.create(
                    model="fake", stream=True,
                    messages=[{"role": "user", "content": "Tell me a long story."}]):
                received += chunk.choices[0].delta.content or "" if chunk.choices else ""
        assert received == "The first half of a reply"
    finally:
        proxy.stop()
    replies = _events(home, "AssistantTurn")
    assert [(e.payload["text"], e.payload["interrupted"]) for e in replies] == [
        ("The first half of a reply", True)]


def test_models_and_other_paths_pass_through(proxy: Proxy) -> None:
    assert [m.id for m in proxy.client().models.list()] == ["fake"]
    with urllib.request.urlopen(f"{proxy.url.removesuffix('/v1')}/props") as resp:
        assert json.loads(resp.read())["default_generation_settings"]["n_ctx"] == 2048


def test_a_malformed_request_is_refused_and_changes_nothing(home: Home, proxy: Proxy) -> None:
    before = len(_events(home))
    for body in (b"not json", b"[]", b'{"messages": []}', b'{"messages": ["hi"]}'):
        request = urllib.request.Request(f"{proxy.url}/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request)
        assert caught.value.code == 400
        assert "message" in json.loads(caught.value.read())["error"]
    assert len(_events(home)) == before


def test_a_port_in_use_is_a_clear_error(home: Home, proxy: Proxy, tmp_path: Path) -> None:
    result = subprocess.run(
        [*diarist_cmd(), "proxy", "--upstream", proxy.upstream_url, "--port", str(proxy.port)],
        env=dict(os.environ, DIARIST_HOME=str(home.root)), capture_output=True, text=True,
        timeout=60)
    assert result.returncode != 0
    assert "cannot listen" in result.stderr and "--port" in result.stderr


def test_a_client_that_hangs_up_mid_stream_leaves_the_partial_reply_in_the_log(
        home: Home, upstream: tuple[str, type[llm_server.Handler]]) -> None:
    url, handler = upstream
    story = " ".join(f"word{i}" for i in range(60))

    def slow(h: llm_server.Handler, body: dict) -> None:
        h.send_stream("text/event-stream", _chunks(story), delay=0.05)

    handler.routes[("POST", "/v1/chat/completions")] = slow
    proxy = Proxy(home, url).start()
    try:
        stream = proxy.client().chat.completions.create(
            model="fake", stream=True, messages=[{"role": "user", "content": "Count, please."}])
        received = ""
        for chunk in stream:
            received += chunk.choices[0].delta.content or "" if chunk.choices else ""
            if received.count("word") >= 3:
                break
        stream.close()
        deadline = time.monotonic() + 20
        replies: list = []
        while not replies and time.monotonic() < deadline:
            time.sleep(0.2)
            replies = _events(home, "AssistantTurn")
    finally:
        proxy.stop()
    assert len(replies) == 1 and replies[0].payload["interrupted"]
    kept = replies[0].payload["text"]
    assert kept.startswith(received) and len(kept) < len(story)


def test_the_night_mines_a_proxy_conversation_once_it_is_idle(home: Home, proxy: Proxy) -> None:
    import datetime as dt

    from events import clock
    from workers.mining.extract import MinerSpec
    from workers.mining.mine import mine

    first = [{"role": "user", "content": "I moved to Tromsø in March for a job at the museum."}]
    _chat(proxy.client(), first)
    _chat(proxy.client(), [*first, {"role": "assistant", "content": REPLY},
                           {"role": "user", "content": "My dog Biscuit loves the snow here."}])
    proxy.stop()  # a proxy conversation never ends by itself: it is mined once idle
    assert mine(home, MinerSpec()).sessions == 0  # still going, as far as anyone knows
    later = clock.now() + dt.timedelta(hours=7)
    report = mine(home, MinerSpec(), now=later)
    assert report.sessions == 1 and report.new >= 1
    with EventLog(home.events_db) as log:
        mined = [m for e in log.iter_all() if e.type == "MemoriesMined"
                 for m in e.payload["memories"]]
    session = _turns(home)[0][0]
    assert session.startswith("proxy/")
    text = " ".join(m["content"] for m in mined)
    assert "Tromsø" in text or "Biscuit" in text, text
    assert REPLY not in text  # the model's replies are never mined as the person's facts


def test_a_secret_said_through_the_proxy_never_reaches_another_prompt(
        home: Home, proxy: Proxy, upstream: tuple[str, type[llm_server.Handler]]) -> None:
    _, handler = upstream
    secret = "sk-proj-Zx81NvQ0aLm3pR7tY2uW9eK4ab"
    _chat(proxy.client(), [{"role": "user",
                            "content": f"My OpenAI key for the weather bot is {secret}"}])
    handler.seen.clear()
    _chat(proxy.client(), [{"role": "user", "content": "What is the key for the weather bot?"}])
    sent = json.dumps([s["body"] for s in handler.seen])
    assert "weather bot" in sent.split("What is the key")[0]  # the turn was recalled ...
    assert secret not in sent                                  # ... without its secret


def test_a_compressed_stream_reaches_the_client_and_the_log_readable(
        home: Home, upstream: tuple[str, type[llm_server.Handler]]) -> None:
    import gzip

    url, handler = upstream

    def gzipped(h: llm_server.Handler, body: dict) -> None:
        payload = gzip.compress(b"".join(_chunks("Packed and sent.")))
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Content-Encoding", "gzip")
        h.send_header("Content-Length", str(len(payload)))
        h.end_headers()
        h.wfile.write(payload)

    handler.routes[("POST", "/v1/chat/completions")] = gzipped
    proxy = Proxy(home, url).start()
    try:
        assert _chat(proxy.client(), [{"role": "user", "content": "Zip it."}],
                     stream=True) == "Packed and sent."
    finally:
        proxy.stop()
    assert [e.payload["text"] for e in _events(home, "AssistantTurn")] == ["Packed and sent."]


# --- echoes ----------------------------------------------------------------------------------

ECHOED = "Thanks for the help with the allotment bees, you really are the best!"


def _with_start_block(body: dict) -> bool:
    first = body["messages"][0]
    return first["role"] == "system" and "[memory context]" in str(first["content"])


def _upstream_calls(handler: type[llm_server.Handler]) -> list[list[dict]]:
    return [s["body"]["messages"] for s in handler.seen if s["path"] == "/v1/chat/completions"]


def _remember_something(proxy: Proxy) -> None:
    """A conversation before, so the next one has a start block."""
    _chat(proxy.client(), [{"role": "user",
                            "content": "My sister Ottoline moved to Reykjavik last spring."}])


@pytest.mark.parametrize("stream", [False, True])
def test_an_echo_never_reaches_the_client_and_is_asked_again_without_the_start_block(
        home: Home, proxy: Proxy, upstream: tuple[str, type[llm_server.Handler]],
        stream: bool) -> None:
    """Like the 0.5B model, the upstream repeats the message while the start block is in
    the prompt; the client gets the second asking's reply, and so does the log."""
    _, handler = upstream
    _remember_something(proxy)
    _upstream(handler, lambda body: ECHOED if _with_start_block(body) else REPLY)
    handler.seen.clear()
    assert _chat(proxy.client(), [{"role": "user", "content": ECHOED}], stream=stream) == REPLY
    first, again = _upstream_calls(handler)
    assert _with_start_block({"messages": first}) and not _with_start_block({"messages": again})
    assert again[0]["content"].startswith(GENERAL)  # the chat's system message, no block
    assert again[1:] == first[1:]                   # the message and any note as before
    assert _turns(home)[-2:] == [(_turns(home)[-1][0], "UserTurn", ECHOED),
                                 (_turns(home)[-1][0], "AssistantTurn", REPLY)]
    # the next message is asked with the start block again
    handler.seen.clear()
    _chat(proxy.client(), [{"role": "user", "content": ECHOED},
                           {"role": "assistant", "content": REPLY},
                           {"role": "user", "content": "And the honey?"}], stream=stream)
    assert [_with_start_block({"messages": m}) for m in _upstream_calls(handler)] == [True]


def test_a_reply_that_opens_as_the_message_but_parts_from_it_is_relayed_whole_once(
        home: Home, proxy: Proxy, upstream: tuple[str, type[llm_server.Handler]]) -> None:
    _, handler = upstream
    _remember_something(proxy)
    parting = ECHOED[:20] + " is what everyone says about you"  # held, then relayed
    _upstream(handler, lambda _: parting)
    handler.seen.clear()
    pieces = [c.choices[0].delta.content or "" for c in proxy.client().chat.completions.create(
        model="fake", stream=True, messages=[{"role": "user", "content": ECHOED}])
        if c.choices]
    assert "".join(pieces) == parting  # the held chunks, then the rest
    assert len(_upstream_calls(handler)) == 1
    assert _turns(home)[-1][1:] == ("AssistantTurn", parting)


@pytest.mark.parametrize("stream", [False, True])
def test_without_a_start_block_or_when_asking_again_fails_the_echo_is_relayed(
        home: Home, proxy: Proxy, upstream: tuple[str, type[llm_server.Handler]],
        stream: bool) -> None:
    _, handler = upstream
    _upstream(handler, lambda _: ECHOED)
    # an empty home: no start block, so nothing to ask without (the chat does the same)
    assert _chat(proxy.client(), [{"role": "user", "content": ECHOED}], stream=stream) == ECHOED
    assert len(_upstream_calls(handler)) == 1
    # with a start block, but the second asking fails: the client gets the first reply
    calls = 0

    def completions(h: llm_server.Handler, body: dict) -> None:
        nonlocal calls
        calls += 1
        if calls > 1:
            h.send_json(500, {"error": {"message": "busy", "type": "server_error"}})
        elif body.get("stream"):
            h.send_stream("text/event-stream", _chunks(ECHOED))
        else:
            h.send_json(200, _completion(ECHOED))

    _remember_something(proxy)
    handler.routes[("POST", "/v1/chat/completions")] = completions
    assert _chat(proxy.client(), [{"role": "user", "content": ECHOED + " Really."}],
                 stream=stream) == ECHOED
    assert calls == 2
    assert _turns(home)[-1][1:] == ("AssistantTurn", ECHOED)


def _repeats_itself(body: dict) -> str:
    """Like the 0.5B model once a session locks in: the last reply in the prompt again."""
    replies = [m["content"] for m in body["messages"] if m["role"] == "assistant"]
    said = str(body["messages"][-1]["content"]).split("\n\n")[-1]
    return replies[-1] if replies else f"A fresh reply about {said.lower().rstrip('?!.')}"


@pytest.mark.parametrize("stream", [False, True])
def test_a_repeat_of_an_earlier_reply_is_asked_again_without_the_earlier_messages(
        home: Home, proxy: Proxy, upstream: tuple[str, type[llm_server.Handler]],
        stream: bool) -> None:
    _, handler = upstream
    _remember_something(proxy)
    _upstream(handler, _repeats_itself)
    first = [{"role": "system", "content": "You are terse."},
             {"role": "user", "content": "How are the bees this spring?"}]
    earlier = _chat(proxy.client(), first, stream=stream)
    assert earlier == "A fresh reply about how are the bees this spring"
    handler.seen.clear()
    reply = _chat(proxy.client(), [*first, {"role": "assistant", "content": earlier},
                                   {"role": "user", "content": "And the honey?"}],
                  stream=stream)
    assert reply == "A fresh reply about and the honey"
    repeated, again = _upstream_calls(handler)
    assert [m["role"] for m in repeated] == ["system", "user", "assistant", "user"]
    assert [m["role"] for m in again] == ["system", "user"]
    assert again[0] == repeated[0] and again[0]["content"].startswith("You are terse.")
    assert again[1] == repeated[-1]                     # the message and its note
    assert _turns(home)[-1][1:] == ("AssistantTurn", reply)


def test_a_tool_call_printed_again_is_no_repeat(
        home: Home, proxy: Proxy, upstream: tuple[str, type[llm_server.Handler]]) -> None:
    """A client's model that prints its tool calls opens each as the last: relayed once."""
    _, handler = upstream
    call = '{"name": "search", "arguments": {"query": "bees and honey this spring"}}'
    _upstream(handler, lambda _: call)
    first = [{"role": "user", "content": "How are the bees this spring?"}]
    assert _chat(proxy.client(), first) == call
    handler.seen.clear()
    again = [*first, {"role": "assistant", "content": call},
             {"role": "user", "content": "[search result]: the bees swarmed in May."}]
    assert _chat(proxy.client(), again, stream=True) == call
    assert len(_upstream_calls(handler)) == 1


def _recites_memory(body: dict) -> str:
    """Like the 0.5B model answering a remark: copies its prompt's memory, title and line."""
    lines = [line for m in body["messages"] for line in str(m["content"]).splitlines()
             if line.startswith("- ")]
    return f"[most relevant]\n{lines[0]}" if lines else REPLY


@pytest.mark.parametrize("stream", [False, True])
def test_a_recital_of_the_memory_is_asked_again_without_memory(
        home: Home, proxy: Proxy, upstream: tuple[str, type[llm_server.Handler]],
        stream: bool) -> None:
    _, handler = upstream
    _remember_something(proxy)
    _upstream(handler, _recites_memory)
    handler.seen.clear()
    messages = [{"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Where did my sister Ottoline move to?"}]
    assert _chat(proxy.client(), messages, stream=stream) == REPLY
    recited, again = _upstream_calls(handler)
    assert any("[memory" in str(m["content"]) for m in recited)
    assert again == messages                 # the client's own messages, no memory
    assert _turns(home)[-1][1:] == ("AssistantTurn", REPLY)


@pytest.mark.parametrize("stream", [False, True])
def test_a_copy_again_is_asked_a_last_time_with_the_message_alone(
        home: Home, proxy: Proxy, upstream: tuple[str, type[llm_server.Handler]],
        stream: bool) -> None:
    """The upstream echoes the message while its prompt holds memory or an earlier reply:
    asked without the start block it still does, so the last asking has neither."""
    _, handler = upstream
    _remember_something(proxy)

    def echoes_with_anything(body: dict) -> str:
        held = any(m["role"] == "assistant" or "[memory" in str(m["content"])
                   for m in body["messages"])
        return ECHOED if held else REPLY

    _upstream(handler, echoes_with_anything)
    handler.seen.clear()
    messages = [{"role": "user", "content": "How are the bees?"},
                {"role": "assistant", "content": "Busy with the lime trees."},
                {"role": "user", "content": ECHOED}]
    assert _chat(proxy.client(), messages, stream=stream) == REPLY
    first, again, alone = _upstream_calls(handler)
    assert _with_start_block({"messages": first})
    assert not _with_start_block({"messages": again}) and again[1:3] == messages[:2]
    assert [m["role"] for m in alone] == ["system", "user"]
    assert "[memory" not in alone[0]["content"] and alone[1]["content"] == ECHOED
    assert _turns(home)[-1][1:] == ("AssistantTurn", REPLY)
