"""The LLM backends against real local HTTP servers speaking each wire format (no client mocks)."""
from __future__ import annotations

import json
import signal
import socket
import threading
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

from events import Home
from events.errors import DiaristError
from projections.tokens import estimate
from workers.llm import (
    BackendError,
    BackendUnavailable,
    ChatReply,
    ContextLengthExceeded,
    ModelNotFound,
    OllamaBackend,
    OpenAIBackend,
    ReplyCutOff,
    ScriptedBackend,
    make_backend,
)

from .llm_server import Handler, serve

KEY = "sk-test-SECRET-4f9a8b7c"
MSGS = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello there"}]
WORDS = ["Hello", " from", " the", " fake", " server", "."]


@pytest.fixture(autouse=True)
def no_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OLLAMA_HOST", "DIARIST_OPENAI_BASE_URL", "DIARIST_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[tuple[str, type[Handler]]]:
    with serve() as running:
        yield running


@pytest.fixture
def closed_port() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"


def assert_clean(err: BaseException) -> None:
    """A user-facing error: a message and a hint, no traceback, no chained raw exception."""
    assert isinstance(err, DiaristError)
    assert err.hint
    assert "Traceback" not in str(err) and "Traceback" not in err.hint
    assert err.__cause__ is None and err.__suppress_context__


# --- ollama wire format -------------------------------------------------------------------

def ollama_chat(handler: Handler, body: dict) -> None:
    if body["model"] != "llama3.2:1b":
        handler.send_json(404, {"error": f'model "{body["model"]}" not found,'
                                         ' try pulling it first'})
        return
    if "TOO LONG" in body["messages"][-1]["content"]:
        handler.send_json(400, {"error": "input length exceeds the context length"})
        return
    if "BOOM" in body["messages"][-1]["content"]:
        handler.send_json(500, {"error": "llama runner process has terminated: signal: killed"})
        return
    lines = [json.dumps({"model": body["model"], "message": {"role": "assistant", "content": w},
                         "done": False}).encode() + b"\n" for w in WORDS]
    lines.append(json.dumps({"model": body["model"],
                             "message": {"role": "assistant", "content": ""},
                             "done": True, "done_reason": "stop", "prompt_eval_count": 26,
                             "eval_count": 6, "eval_duration": 2_000_000_000}).encode() + b"\n")
    handler.send_stream("application/x-ndjson", lines)


def ollama_show(handler: Handler, body: dict) -> None:
    if body["model"] == "llama3.2:1b":
        handler.send_json(200, {"model_info": {"general.architecture": "llama",
                                               "llama.context_length": 131072},
                                "parameters": 'num_ctx                        8192\n'
                                              'stop "<|eot_id|>"'})
    elif body["model"] == "plain":
        handler.send_json(200, {"model_info": {"qwen2.context_length": 32768}})
    else:
        handler.send_json(404, {"error": f"model '{body['model']}' not found"})


@pytest.fixture
def ollama(server: tuple[str, type[Handler]]) -> tuple[str, type[Handler]]:
    url, h = server
    h.routes.update({
        ("POST", "/api/chat"): ollama_chat,
        ("POST", "/api/show"): ollama_show,
        ("GET", "/api/tags"): lambda hd, b: hd.send_json(200, {"models": [
            {"name": "llama3.2:1b", "model": "llama3.2:1b"}, {"name": "plain", "model": "plain"}]}),
    })
    return url, h


def test_ollama_streams_tokens_in_order_with_stats(ollama: tuple[str, type[Handler]]) -> None:
    url, h = ollama
    got: list[str] = []
    b = make_backend("ollama", base_url=url, model="llama3.2:1b")
    reply = b.chat(MSGS, on_token=got.append, max_tokens=64, temperature=0.2)
    assert got == WORDS
    assert reply.text == "".join(WORDS) and not reply.interrupted
    assert reply.stats.prompt_tokens == 26 and reply.stats.reply_tokens == 6
    assert reply.stats.tokens_per_sec == pytest.approx(3.0)
    assert reply.stats.elapsed_ms >= 50  # 7 chunks, 10 ms apart
    sent = h.seen[-1]["body"]
    assert sent["stream"] is True and sent["messages"] == MSGS
    assert sent["options"] == {"num_predict": 64, "temperature": 0.2}


def test_ollama_non_streamed(ollama: tuple[str, type[Handler]]) -> None:
    url, h = ollama
    h.routes[("POST", "/api/chat")] = lambda hd, b: hd.send_json(200, {
        "message": {"role": "assistant", "content": "whole"}, "done": True,
        "prompt_eval_count": 5, "eval_count": 1, "eval_duration": 500_000_000})
    reply = OllamaBackend(url, "llama3.2:1b").chat(MSGS, stream=False)
    assert reply.text == "whole" and reply.stats.tokens_per_sec == pytest.approx(2.0)
    assert h.seen[-1]["body"]["stream"] is False


def test_ollama_models_and_context_window(ollama: tuple[str, type[Handler]]) -> None:
    url, _ = ollama
    b = OllamaBackend(url, "llama3.2:1b")
    assert b.models() == ["llama3.2:1b", "plain"]
    assert b.context_window() == 8192  # num_ctx parameter overrides model_info
    assert b.context_window("plain") == 32768
    with pytest.raises(ModelNotFound) as e:
        b.context_window("nope")
    assert "ollama pull nope" in e.value.hint


def test_ollama_model_defaults_to_first_pulled(ollama: tuple[str, type[Handler]]) -> None:
    url, _ = ollama
    assert OllamaBackend(url).model == "llama3.2:1b"


def test_ollama_host_from_env(ollama: tuple[str, type[Handler]],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    url, _ = ollama
    monkeypatch.setenv("OLLAMA_HOST", url.removeprefix("http://"))
    assert make_backend("ollama", model="llama3.2:1b").base_url == url
    monkeypatch.setenv("OLLAMA_HOST", "0.0.0.0")
    assert make_backend("ollama").base_url == "http://127.0.0.1:11434"


def test_ollama_errors(ollama: tuple[str, type[Handler]], closed_port: str) -> None:
    url, _ = ollama
    with pytest.raises(ModelNotFound) as e:
        OllamaBackend(url, "qwen9:70b").chat(MSGS)
    assert_clean(e.value)
    assert "qwen9:70b" in str(e.value) and "ollama pull qwen9:70b" in e.value.hint
    with pytest.raises(ContextLengthExceeded) as e2:
        OllamaBackend(url, "llama3.2:1b").chat([{"role": "user", "content": "TOO LONG"}])
    assert_clean(e2.value)
    with pytest.raises(BackendError) as e3:
        OllamaBackend(url, "llama3.2:1b").chat([{"role": "user", "content": "BOOM"}])
    assert_clean(e3.value)
    assert "500" in str(e3.value) and "signal: killed" in str(e3.value)
    with pytest.raises(BackendUnavailable) as e4:
        OllamaBackend(closed_port, "llama3.2:1b").chat(MSGS)
    assert_clean(e4.value)
    assert "ollama serve" in e4.value.hint and closed_port in e4.value.hint
    with pytest.raises(BackendUnavailable):
        OllamaBackend(closed_port).models()


def test_ollama_error_mid_stream(ollama: tuple[str, type[Handler]]) -> None:
    url, h = ollama
    h.routes[("POST", "/api/chat")] = lambda hd, b: hd.send_stream("application/x-ndjson", [
        b'{"message":{"content":"par"},"done":false}\n', b'{"error":"out of memory"}\n'])
    with pytest.raises(BackendError, match="out of memory") as e:
        OllamaBackend(url, "m").chat(MSGS)
    assert_clean(e.value)


def test_interrupt_in_on_token_returns_partial_reply(ollama: tuple[str, type[Handler]]) -> None:
    url, _ = ollama
    got: list[str] = []

    def on_token(piece: str) -> None:
        got.append(piece)
        if len(got) == 3:
            raise KeyboardInterrupt

    reply = OllamaBackend(url, "llama3.2:1b").chat(MSGS, on_token=on_token)
    assert reply.interrupted and reply.text == "".join(WORDS[:3])
    assert reply.stats.reply_tokens is None  # the final chunk never arrived


def sigint_main_thread_after(seconds: float) -> threading.Timer:
    """A real Ctrl-C, delivered to the main thread while it blocks on the socket."""
    t = threading.Timer(seconds, signal.pthread_kill,
                        (threading.main_thread().ident, signal.SIGINT))
    t.start()
    return t


def test_ctrl_c_while_blocked_reading(ollama: tuple[str, type[Handler]]) -> None:
    url, h = ollama
    slow = ([b'{"message":{"content":"first"},"done":false}\n'] * 1
            + [b'{"message":{"content":"x"},"done":false}\n'] * 5)
    h.routes[("POST", "/api/chat")] = lambda hd, b: hd.send_stream("application/x-ndjson", slow,
                                                                   delay=0.4)
    t = sigint_main_thread_after(0.2)
    reply = OllamaBackend(url, "m").chat(MSGS)
    t.join()
    assert reply.interrupted and reply.text == "first"


def test_ctrl_c_before_the_first_byte(openai: tuple[str, type[Handler]]) -> None:
    url, h = openai

    def thinking(hd: Handler, body: dict) -> None:
        time.sleep(0.6)  # prompt processing on a small CPU
        hd.send_json(200, {"choices": [{"message": {"content": "late"}}]})

    h.routes[("POST", "/v1/chat/completions")] = thinking
    t = sigint_main_thread_after(0.1)
    reply = OpenAIBackend(url, "m").chat(MSGS)
    t.join()
    assert reply.interrupted and reply.text == "" and reply.stats.reply_tokens is None


# --- openai wire format -------------------------------------------------------------------

def sse(obj: object) -> bytes:
    return f"data: {json.dumps(obj)}\n\n".encode()


def openai_chat(handler: Handler, body: dict) -> None:
    if handler.headers.get("Authorization") != f"Bearer {KEY}":
        handler.send_json(401, {"error": {"message": f"Incorrect API key provided: "
                                                     f"{handler.headers.get('Authorization')}",
                                          "type": "invalid_request_error"}})
        return
    if body["model"] != "qwen2.5-1.5b":
        handler.send_json(404, {"error": {"message": f"The model `{body['model']}` does not exist.",
                                          "type": "invalid_request_error",
                                          "code": "model_not_found"}})
        return
    last = body["messages"][-1]["content"]
    if "TOO LONG" in last:
        handler.send_json(400, {"error": {"code": 400, "type": "exceed_context_size_error",
                                          "message": "the request exceeds the available context"
                                                     " size (4096 tokens)"}})
        return
    if "BOOM" in last:
        handler.send_json(500, {"error": {"code": 500, "message": "slot unavailable"}})
        return
    if not body.get("stream"):
        handler.send_json(200, {"choices": [{"index": 0, "message": {"role": "assistant",
                                                                     "content": "whole"}}],
                                "usage": {"prompt_tokens": 9, "completion_tokens": 1}})
        return
    chunks = [b": keep-alive\n\n",
              sse({"choices": [{"index": 0, "delta": {"role": "assistant"},
                                "finish_reason": None}]})]
    chunks += [sse({"choices": [{"index": 0, "delta": {"content": w}, "finish_reason": None}]})
               for w in WORDS]
    if "TOOL" in last:
        chunks += [sse({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "call_1", "type": "function",
             "function": {"name": "remember", "arguments": '{"te'}}]}}]}),
            sse({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "function": {"arguments": 'xt": "hi"}'}}]}}]})]
    chunks.append(sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append(sse({"choices": [], "usage": {"prompt_tokens": 31, "completion_tokens": 6,
                                                    "total_tokens": 37},
                           "timings": {"predicted_per_second": 12.5}}))
    chunks.append(b"data: [DONE]\n\n")
    handler.send_stream("text/event-stream", chunks)


@pytest.fixture
def openai(server: tuple[str, type[Handler]]) -> tuple[str, type[Handler]]:
    url, h = server
    h.routes.update({
        ("POST", "/v1/chat/completions"): openai_chat,
        ("GET", "/v1/models"): lambda hd, b: hd.send_json(200, {"object": "list", "data": [
            {"id": "qwen2.5-1.5b", "object": "model", "meta": {"n_ctx_train": 32768}}]}),
        ("GET", "/props"): lambda hd, b: hd.send_json(200, {
            "default_generation_settings": {"n_ctx": 4096}}),
    })
    return url, h


def test_openai_streams_tokens_with_usage(openai: tuple[str, type[Handler]]) -> None:
    url, h = openai
    got: list[str] = []
    b = make_backend("openai", base_url=url, api_key=KEY, model="qwen2.5-1.5b")
    reply = b.chat(MSGS, on_token=got.append, max_tokens=32, temperature=0.0)
    assert got == WORDS and reply.text == "".join(WORDS)
    assert (reply.stats.prompt_tokens, reply.stats.reply_tokens) == (31, 6)
    assert reply.stats.tokens_per_sec == 12.5 and reply.tool_calls == []
    req = h.seen[-1]
    assert req["headers"]["Authorization"] == f"Bearer {KEY}"
    assert req["body"]["stream_options"] == {"include_usage": True}
    assert req["body"]["max_tokens"] == 32 and req["body"]["temperature"] == 0.0


def test_config_defaults_apply_only_where_a_call_leaves_them(
        openai: tuple[str, type[Handler]], ollama: tuple[str, type[Handler]]) -> None:
    """The config's llm.max_reply_tokens / llm.temperature reach the wire for chat replies;
    a call that sets its own (the summariser, the extractor) keeps its own."""
    url, h = openai
    b = make_backend("openai", base_url=url, api_key=KEY, model="qwen2.5-1.5b", max_tokens=64,
                     temperature=0.3)
    b.chat(MSGS)
    assert h.seen[-1]["body"]["max_tokens"] == 64 and h.seen[-1]["body"]["temperature"] == 0.3
    b.chat(MSGS, max_tokens=200, temperature=0)
    assert h.seen[-1]["body"]["max_tokens"] == 200 and h.seen[-1]["body"]["temperature"] == 0
    make_backend("openai", base_url=url, api_key=KEY, model="qwen2.5-1.5b").chat(MSGS)
    assert "max_tokens" not in h.seen[-1]["body"] and "temperature" not in h.seen[-1]["body"]
    url, h = ollama
    make_backend("ollama", base_url=url, model="llama3.2:1b", max_tokens=48).chat(MSGS)
    assert h.seen[-1]["body"]["options"] == {"num_predict": 48}


def test_tool_choice_none_on_each_wire(openai: tuple[str, type[Handler]],
                                       ollama: tuple[str, type[Handler]]) -> None:
    """The chat's final answer after tool rounds: OpenAI gets tool_choice "none"; Ollama has
    no such field, so it gets no tools at all."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    url, h = openai
    make_backend("openai", base_url=url, api_key=KEY, model="qwen2.5-1.5b").chat(
        MSGS, tools=tools, tool_choice="none")
    assert h.seen[-1]["body"]["tools"] == tools and h.seen[-1]["body"]["tool_choice"] == "none"
    url, h = ollama
    make_backend("ollama", base_url=url, model="llama3.2:1b").chat(MSGS, tools=tools,
                                                                   tool_choice="none")
    assert "tools" not in h.seen[-1]["body"]
    make_backend("ollama", base_url=url, model="llama3.2:1b").chat(MSGS, tools=tools)
    assert h.seen[-1]["body"]["tools"] == tools


def test_openai_without_usage_gives_none(openai: tuple[str, type[Handler]]) -> None:
    url, h = openai
    h.routes[("POST", "/v1/chat/completions")] = lambda hd, b: hd.send_stream("text/event-stream", [
        sse({"choices": [{"delta": {"content": "hi"}}]}), b"data: [DONE]\n\n"])
    reply = OpenAIBackend(url + "/v1/", "m").chat(MSGS)  # trailing /v1/ is accepted too
    assert reply.text == "hi"
    assert reply.stats.prompt_tokens is None and reply.stats.reply_tokens is None
    assert reply.stats.tokens_per_sec is None
    assert "Authorization" not in h.seen[-1]["headers"]


def test_openai_non_streamed_and_tool_calls(openai: tuple[str, type[Handler]]) -> None:
    url, _ = openai
    b = OpenAIBackend(url, "qwen2.5-1.5b", api_key=KEY)
    got: list[str] = []
    reply = b.chat(MSGS, stream=False, on_token=got.append)
    assert reply.text == "whole" and got == ["whole"] and reply.stats.prompt_tokens == 9
    reply = b.chat([{"role": "user", "content": "TOOL please"}])
    assert reply.tool_calls == [{"id": "call_1", "type": "function",
                                 "function": {"name": "remember", "arguments": '{"text": "hi"}'}}]


def test_openai_models_and_context_window(openai: tuple[str, type[Handler]]) -> None:
    url, h = openai
    b = OpenAIBackend(url, api_key=KEY)
    assert b.models() == ["qwen2.5-1.5b"]
    assert b.model == "qwen2.5-1.5b"
    assert b.context_window() == 4096  # /props: the context actually allocated
    del h.routes[("GET", "/props")]
    assert OpenAIBackend(url, "qwen2.5-1.5b").context_window() == 32768  # meta.n_ctx_train
    h.routes[("GET", "/v1/models")] = lambda hd, b: hd.send_json(200, {"data": [{"id": "x"}]})
    assert OpenAIBackend(url, "x").context_window() is None


def test_openai_env_fallbacks(openai: tuple[str, type[Handler]],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    url, h = openai
    monkeypatch.setenv("DIARIST_OPENAI_BASE_URL", url + "/v1")
    monkeypatch.setenv("DIARIST_OPENAI_API_KEY", KEY)
    b = make_backend("openai", model="qwen2.5-1.5b")
    assert b.chat(MSGS).text == "".join(WORDS)
    assert h.seen[-1]["headers"]["Authorization"] == f"Bearer {KEY}"
    assert KEY not in repr(b)


def test_openai_errors(openai: tuple[str, type[Handler]], closed_port: str) -> None:
    url, _ = openai
    b = OpenAIBackend(url, "nope", api_key=KEY)
    with pytest.raises(ModelNotFound) as e1:
        b.chat(MSGS)
    with pytest.raises(ContextLengthExceeded) as e2:
        OpenAIBackend(url, "qwen2.5-1.5b", api_key=KEY).chat([{"role": "user",
                                                               "content": "TOO LONG"}])
    with pytest.raises(BackendError) as e3:
        OpenAIBackend(url, "qwen2.5-1.5b", api_key=KEY).chat([{"role": "user", "content": "BOOM"}])
    assert "500" in str(e3.value) and "slot unavailable" in str(e3.value)
    with pytest.raises(BackendUnavailable) as e4:
        OpenAIBackend(closed_port, "m", api_key=KEY).chat(MSGS)
    assert closed_port in e4.value.hint
    with pytest.raises(BackendError) as e5:  # no such endpoint: wrong base URL
        OpenAIBackend(url + "/api", "m", api_key=KEY).chat(MSGS)
    assert "base URL" in e5.value.hint
    _, h = openai
    h.routes[("GET", "/v1/models")] = lambda hd, b: hd.send_json(  # llama.cpp, weights loading
        503, {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}})
    with pytest.raises(BackendUnavailable) as e6:
        OpenAIBackend(url, None, api_key=KEY).models()
    assert "still loading" in str(e6.value) and "try again" in e6.value.hint
    for err in (e1.value, e2.value, e3.value, e4.value, e5.value, e6.value):
        assert_clean(err)
        assert KEY not in str(err) and KEY not in err.hint
        assert KEY not in "".join(traceback.format_exception(err))


def test_api_key_never_in_repr_or_error_echo(openai: tuple[str, type[Handler]]) -> None:
    url, _ = openai
    wrong = "sk-wrong-ECHOED-123456"
    b = OpenAIBackend(url, "qwen2.5-1.5b", api_key=wrong)
    assert wrong not in repr(b) and "***" in repr(b)
    with pytest.raises(BackendError) as e:
        b.chat(MSGS)  # the fake server echoes the bad key back, like OpenAI does
    assert "401" in str(e.value) and "API key" in e.value.hint
    assert wrong not in str(e.value) and "***" in str(e.value)


def test_openai_interrupt_closes_connection(openai: tuple[str, type[Handler]]) -> None:
    url, _ = openai
    got: list[str] = []

    def on_token(piece: str) -> None:
        got.append(piece)
        raise KeyboardInterrupt

    b = OpenAIBackend(url, "qwen2.5-1.5b", api_key=KEY)
    reply = b.chat(MSGS, on_token=on_token)
    assert reply.interrupted and reply.text == WORDS[0] and got == [WORDS[0]]
    assert b.chat(MSGS).text == "".join(WORDS)  # the backend still works afterwards


# --- scripted -----------------------------------------------------------------------------

def test_scripted_rules(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    script.write_text('# demo\n{"match": "(?i)weather", "reply": "It is sunny."}\n'
                      '{"match": "name", "reply": "I am diarist."}\n'
                      '{"reply": "I do not know."}\n', encoding="utf-8")
    b = make_backend("scripted", script=script)
    got: list[str] = []
    r = b.chat([{"role": "user", "content": "How is the WEATHER?"}], on_token=got.append)
    assert isinstance(r, ChatReply) and r.text == "It is sunny." and got == ["It ", "is ", "sunny."]
    assert r.stats.prompt_tokens == estimate("How is the WEATHER?")
    assert r.stats.reply_tokens == estimate("It is sunny.")
    assert b.chat([{"role": "user", "content": "your name, weather?"}]).text == "It is sunny."
    assert b.chat([{"role": "user", "content": "what is your name"}]).text == "I am diarist."
    assert b.chat([{"role": "user", "content": "??"}]).text == "I do not know."
    assert b.chat([{"role": "user", "content": "??"}], stream=False).text == "I do not know."
    assert b.context_window() == 4096 and b.models() == ["scripted"]


def test_scripted_echo_and_interrupt() -> None:
    b = ScriptedBackend(context_window=2048)
    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "one two three"}]
    r = b.chat(msgs)
    assert r.text == "echo: one two three"
    assert r.stats.prompt_tokens == estimate("sys") + estimate("one two three")
    assert b.context_window() == 2048

    def stop(piece: str) -> None:
        if "two" in piece:
            raise KeyboardInterrupt

    r = b.chat(msgs, on_token=stop)
    assert r.interrupted and r.text == "echo: one two "


def test_scripted_bad_script(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"reply": "ok"}\n{"match": "(", "reply": "x"}\n', encoding="utf-8")
    with pytest.raises(DiaristError, match=r"bad\.jsonl:2") as e:
        ScriptedBackend(bad)
    assert_clean(e.value)
    with pytest.raises(DiaristError, match="no such file"):
        ScriptedBackend(tmp_path / "missing.jsonl")


def test_unknown_backend() -> None:
    with pytest.raises(DiaristError, match="unknown LLM backend") as e:
        make_backend("gpt5")
    assert "ollama" in e.value.hint


# --- the config's llm section -----------------------------------------------------------


def test_llm_settings_come_from_argument_then_env_then_config(
        openai: tuple[str, type[Handler]], closed_port: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from events.config import LLMConfig

    url, h = openai
    cfg = LLMConfig(backend="openai", model="qwen2.5-1.5b", base_url=url, api_key=KEY,
                    max_reply_tokens=40)
    b = make_backend(llm=cfg)  # everything from the config
    assert b.name == "openai" and b.base_url == url + "/v1"
    assert b.chat(MSGS).text == "".join(WORDS)
    assert h.seen[-1]["headers"]["Authorization"] == f"Bearer {KEY}"
    assert h.seen[-1]["body"]["max_tokens"] == 40
    assert KEY not in repr(b) and KEY not in repr(cfg)
    # the environment wins over the config, the argument over both
    monkeypatch.setenv("DIARIST_OPENAI_BASE_URL", url)
    monkeypatch.setenv("DIARIST_OPENAI_API_KEY", KEY)
    moved = LLMConfig(backend="openai", model="qwen2.5-1.5b", base_url=closed_port,
                      api_key="sk-config-WRONG-000000")
    assert make_backend(llm=moved).chat(MSGS).text == "".join(WORDS)
    assert h.seen[-1]["headers"]["Authorization"] == f"Bearer {KEY}"
    assert make_backend(base_url=closed_port, llm=cfg).base_url == closed_port + "/v1"
    assert make_backend("scripted", llm=cfg).name == "scripted"
    assert make_backend().name == "ollama"  # no argument, no config


def test_chat_reads_the_llm_config(openai: tuple[str, type[Handler]], home: Home) -> None:  # type: ignore[no-untyped-def]
    """`diarist chat` with no flags talks to the server the config names, with its key; the
    key is in no event and no output."""
    from click.testing import CliRunner

    from cli.main import cli
    from events import EventLog

    url, h = openai
    home.config_file.write_text(
        f"llm:\n  backend: openai\n  model: qwen2.5-1.5b\n  base_url: {url}\n  api_key: {KEY}\n")
    result = CliRunner().invoke(cli, ["chat", "--no-tools"], input="hello\n/status\n/exit\n",
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "openai qwen2.5-1.5b, context 4096 tokens" in result.output
    assert "".join(WORDS) in result.output and KEY not in result.output
    assert h.seen[-1]["headers"]["Authorization"] == f"Bearer {KEY}"
    with EventLog(home.events_db) as log:
        assert KEY not in json.dumps([e.payload for e in log.read()])


@pytest.mark.parametrize("yaml_text, message", [
    ("llm:\n  backend: llamafile\n",
     "`llm.backend` must be null or one of ollama, openai, scripted"),
    ("llm:\n  base_url: localhost:8080\n",
     "`llm.base_url` must be null or an http:// or https:// URL"),
    ("llm:\n  api_key: 123456789\n",
     "`llm.api_key` must be null or a non-empty string, got a value (not shown"),
])
def test_llm_config_is_validated(home: Home, yaml_text: str, message: str) -> None:
    from click.testing import CliRunner

    from cli.main import cli

    home.config_file.write_text(yaml_text)
    result = CliRunner().invoke(cli, ["recall", "x"])
    assert result.exit_code == 1 and message in result.output
    assert "123456789" not in result.output


# --- servers that misbehave -------------------------------------------------------------------

def test_a_chunk_that_is_not_an_object_cuts_the_reply_and_keeps_it(
        openai: tuple[str, type[Handler]]) -> None:
    url, h = openai
    h.routes[("POST", "/v1/chat/completions")] = lambda hd, b: hd.send_stream(
        "text/event-stream", [sse({"choices": [{"delta": {"content": "Hel"}}]}),
                              sse({"choices": [{"delta": {"content": "lo"}}]}),
                              b'data: ["a", "list"]\n\n', b"data: [DONE]\n\n"])
    shown: list[str] = []
    with pytest.raises(ReplyCutOff) as e:
        OpenAIBackend(url, "m").chat(MSGS, on_token=shown.append)
    assert_clean(e.value)
    assert 'not a JSON object: ["a", "list"]' in str(e.value)
    assert shown == ["Hel", "lo"]
    assert e.value.partial.text == "Hello" and e.value.partial.interrupted


@pytest.mark.parametrize("chunk", [
    {"choices": "nope"}, {"choices": [{"delta": {"content": 5}}]},
    {"choices": [{"delta": {"tool_calls": ["x"]}}]}, {"choices": [7]},
])
def test_chunks_with_wrong_field_types_are_named(openai: tuple[str, type[Handler]],
                                                 chunk: dict) -> None:
    url, h = openai
    h.routes[("POST", "/v1/chat/completions")] = lambda hd, b: hd.send_stream(
        "text/event-stream", [sse({"choices": [{"delta": {"content": "ok"}}]}), sse(chunk)])
    with pytest.raises(ReplyCutOff, match="a malformed chunk") as e:
        OpenAIBackend(url, "m").chat(MSGS)
    assert e.value.partial.text == "ok"


def test_a_stream_that_ends_early_or_is_not_a_stream(openai: tuple[str, type[Handler]],
                                                     ollama: tuple[str, type[Handler]]) -> None:
    url, h = openai
    h.routes[("POST", "/v1/chat/completions")] = lambda hd, b: hd.send_stream(
        "text/event-stream", [sse({"choices": [{"delta": {"content": "Hel"}}]})])
    with pytest.raises(ReplyCutOff, match="closed the stream before the reply was complete"):
        OpenAIBackend(url, "m").chat(MSGS)
    h.routes[("POST", "/v1/chat/completions")] = lambda hd, b: hd.send_stream(
        "text/html", [b"<html>It works!</html>\n"])
    with pytest.raises(BackendError, match="no OpenAI stream chunk.*<html>It works!"):
        OpenAIBackend(url, "m").chat(MSGS)
    oll, oh = ollama
    oh.routes[("POST", "/api/chat")] = lambda hd, b: hd.send_stream(
        "application/x-ndjson", [b'{"message": {"content": "Hi"}, "done": false}\n', b"[1]\n"])
    with pytest.raises(ReplyCutOff, match="not a JSON object") as e:
        OllamaBackend(oll, "m").chat(MSGS)
    assert e.value.partial.text == "Hi"
    oh.routes[("POST", "/api/chat")] = lambda hd, b: hd.send_stream(
        "application/x-ndjson", [b'{"message": {"content": "Hi"}, "done": false}\n'])
    with pytest.raises(ReplyCutOff, match="closed the stream before"):
        OllamaBackend(oll, "m").chat(MSGS)


def test_metadata_that_is_not_what_was_asked(openai: tuple[str, type[Handler]]) -> None:
    url, h = openai
    h.routes[("GET", "/v1/models")] = lambda hd, b: hd.send_json(200, ["not", "an", "object"])
    with pytest.raises(BackendError, match="not a JSON object") as e:
        OpenAIBackend(url, None).models()
    assert_clean(e.value)
    h.routes[("GET", "/props")] = lambda hd, b: hd.send_json(
        200, {"default_generation_settings": {"n_ctx": "lots"}})
    h.routes[("GET", "/v1/models")] = lambda hd, b: hd.send_json(
        200, {"data": [{"id": "m", "meta": {"n_ctx_train": float("inf")}}]})
    assert OpenAIBackend(url, "m").context_window() is None  # nonsense is unknown, not a crash


def test_a_stalled_metadata_request_times_out_clearly(openai: tuple[str, type[Handler]]) -> None:
    url, h = openai

    def stalled(hd: Handler, body: dict) -> None:
        time.sleep(4)
        hd.send_json(200, {"n_ctx": 4096})

    h.routes[("GET", "/props")] = stalled
    started = time.monotonic()
    with pytest.raises(BackendUnavailable, match=r"no answer from .*/props within 0\.5 s") as e:
        OpenAIBackend(url, "m", timeout=0.5).context_window()
    assert time.monotonic() - started < 3  # gave up at the timeout, not when the server answered
    assert "llm.timeout" in e.value.hint


def test_an_error_body_is_clipped(openai: tuple[str, type[Handler]]) -> None:
    url, h = openai
    h.routes[("POST", "/v1/chat/completions")] = lambda hd, b: hd.send_json(
        500, {"error": {"message": "boom " + "y" * 5000}})
    with pytest.raises(BackendError) as e:
        OpenAIBackend(url, "m").chat(MSGS)
    assert len(str(e.value)) < 500 and "(4,705 more characters)" in str(e.value)


def test_a_base_url_that_cannot_work_is_refused_up_front() -> None:
    for url in ("http://127.0.0.1:eighty", "ftp://host", "http://"):
        with pytest.raises(BackendError, match="is not a usable URL") as e:
            make_backend("openai", base_url=url)
        assert "http://HOST:PORT" in e.value.hint
        with pytest.raises(BackendError, match="is not a usable URL"):
            make_backend("ollama", base_url=url)
    assert make_backend("openai", base_url="http://a").base_url == "http://a/v1"
